//! Unit tests of `store/seeding.rs`: a bulk-loaded catalogue is the one row-by-row inserts make.
use rusqlite::Connection;

use super::super::listings::{self, ListingRow};
use super::super::{agents, test_agent, test_db};
use super::insert_listings;

const WORDS: &[&str] = &[
    "solar", "wind", "guitar", "vintage", "camera", "crop", "soil", "rent", "wage", "gpu",
];

/// A database with the schema, two sellers, a vertical and two listings inserted row by row
/// (so that a load appends to a catalogue with `changed` numbers already taken).
fn catalogue() -> Connection {
    let conn = test_db();
    for (id, handle) in [("s1", "A-1"), ("s2", "A-2")] {
        agents::insert(&conn, &test_agent(id, handle), &format!("k-{id}"), None).unwrap();
    }
    conn.execute_batch(
        "INSERT INTO categories (slug, name, icon, class, description, position)
             VALUES ('c', 'C', 'i', 'x', 'd', 0);
         INSERT INTO verticals (slug, name, icon, category, is_external, position)
             VALUES ('v', 'V', 'i', 'c', 0, 0);",
    )
    .unwrap();
    for row in rows(0..2) {
        listings::insert(&conn, &row).unwrap();
    }
    conn
}

fn rows(range: std::ops::Range<usize>) -> Vec<ListingRow> {
    range
        .map(|i| {
            let word = |k: usize| WORDS[(i * 7 + k * 3) % WORDS.len()];
            let title = format!("{} {} tok{i}", word(0), word(1));
            ListingRow {
                seq: 0,
                id: format!("listing-{i:05}"),
                seller_id: if i % 3 == 0 { "s1" } else { "s2" }.into(),
                seller_code: "S-000001".into(),
                seller_reputation: 0.5,
                vertical_slug: "v".into(),
                category: "c".into(),
                description: format!("{title} {} {}", word(2), word(3)),
                title,
                price_cents: 100 * i as i64,
                listing_type: "standard".into(),
                max_copies: (i % 4 == 0).then_some(3),
                sold_count: 0,
                purchase_count: i as i64 % 5,
                view_count: i as i64,
                active: i % 9 != 0,
                exclusive_sold: false,
                fingerprint: format!("sha256:{i}"),
                preview: "{}".into(),
                images: "[]".into(),
                metadata: "{}".into(),
                is_sample: i % 50 == 1,
                physical: false,
                deliverable_ref: None,
                health_consent: false,
                deidentification: None,
                authorized_uses: None,
                rating_sum: 0,
                rating_count: 0,
                quality: 0.0,
                created_at: "2026-01-01T00:00:00Z".into(),
                version: 1,
                last_modified: None,
                modification_count: 0,
            }
        })
        .collect()
}

/// Every listing column of every row, as text, in `seq` order.
fn table(conn: &Connection) -> Vec<String> {
    let mut stmt = conn.prepare("SELECT * FROM listings ORDER BY seq").unwrap();
    let columns = stmt.column_count();
    stmt.query_map([], |r| {
        (0..columns)
            .map(|i| Ok(format!("{:?}", r.get_ref(i)?)))
            .collect::<rusqlite::Result<Vec<_>>>()
            .map(|values| values.join("|"))
    })
    .unwrap()
    .collect::<rusqlite::Result<_>>()
    .unwrap()
}

/// Every schema object of the database (type, name, table, definition), by name.
fn schema(conn: &Connection) -> Vec<(String, String, String, Option<String>)> {
    conn.prepare("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

/// What searches for a few words, a phrase, a prefix and a rare token find.
fn searches(conn: &Connection) -> Vec<Vec<i64>> {
    [
        "solar",
        "vintage camera",
        "\"wind guitar\"",
        "gp*",
        "tok17",
        "nothing",
    ]
    .iter()
    .map(|q| listings::fts_rowids(conn, q).unwrap())
    .collect()
}

#[test]
fn a_bulk_load_leaves_the_catalogue_row_by_row_inserts_leave() {
    let by_row = catalogue();
    for row in rows(2..300) {
        listings::insert(&by_row, &row).unwrap();
    }
    // As the seeder finished its row-by-row inserts (the bulk load does it before its commit).
    listings::optimize_search(&by_row).unwrap();
    let mut bulk = catalogue();
    assert_eq!(insert_listings(&mut bulk, rows(2..300)).unwrap(), 298);

    assert_eq!(table(&bulk), table(&by_row));
    assert_eq!(table(&bulk).len(), 300);
    let found = searches(&bulk);
    assert!(found[0].len() > 10 && found[4] == vec![18], "{found:?}");
    assert_eq!(found, searches(&by_row));
    assert_eq!(schema(&bulk), schema(&by_row));
    bulk.execute_batch(
        "INSERT INTO listings_fts (listings_fts, rank) VALUES ('integrity-check', 1)",
    )
    .unwrap();
    // The load's FTS5 setting is gone: the search table's configuration is the default one.
    let config = |conn: &Connection| -> Vec<(String, i64)> {
        conn.prepare("SELECT k, v FROM listings_fts_config ORDER BY k")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    };
    assert_eq!(config(&bulk), config(&by_row));
    // The triggers are back: a later insert and edit number `changed` and search as before.
    for conn in [&bulk, &by_row] {
        listings::insert(conn, &rows(300..301)[0]).unwrap();
        conn.execute(
            "UPDATE listings SET title = 'zebra' WHERE id = 'listing-00005'",
            [],
        )
        .unwrap();
    }
    assert_eq!(table(&bulk), table(&by_row));
    assert_eq!(listings::fts_rowids(&bulk, "zebra").unwrap(), vec![6]);
}

#[test]
fn a_bulk_load_puts_the_connection_settings_back() {
    let mut conn = catalogue();
    conn.execute_batch(
        "PRAGMA synchronous = NORMAL; PRAGMA cache_size = -4096; PRAGMA threads = 0;",
    )
    .unwrap();
    insert_listings(&mut conn, rows(2..5)).unwrap();
    let synchronous: i64 = conn
        .query_row("PRAGMA synchronous", [], |r| r.get(0))
        .unwrap();
    let cache: i64 = conn
        .query_row("PRAGMA cache_size", [], |r| r.get(0))
        .unwrap();
    assert_eq!((synchronous, cache), (1, -4096));
}

#[test]
fn a_failed_bulk_load_writes_nothing() {
    let mut conn = catalogue();
    let before = (table(&conn), schema(&conn));
    let mut bad = rows(2..6);
    bad[3].seller_id = "nobody".into();
    assert!(insert_listings(&mut conn, bad).is_err());
    assert_eq!((table(&conn), schema(&conn)), before);
    assert_eq!(
        searches(&conn),
        searches(&catalogue()),
        "the search index is untouched"
    );
}
