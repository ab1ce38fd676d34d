//! Unit tests of `store/mod.rs`.
use super::*;
use rusqlite::params;

/// Every table's columns and every index, as SQLite describes them.
fn shape(conn: &Connection) -> Vec<String> {
    let names: Vec<(String, String)> = conn
        .prepare("SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    let mut out = Vec::new();
    for (kind, name) in names {
        out.push(format!("{kind} {name}"));
        if kind == "table" {
            let mut stmt = conn
                .prepare(&format!("PRAGMA table_info(\"{name}\")"))
                .unwrap();
            let columns = stmt
                .query_map([], |r| {
                    Ok(format!(
                        "  {} {} notnull={} default={:?} pk={}",
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, i64>(3)?,
                        r.get::<_, Option<String>>(4)?,
                        r.get::<_, i64>(5)?
                    ))
                })
                .unwrap()
                .collect::<rusqlite::Result<Vec<_>>>()
                .unwrap();
            out.extend(columns);
        }
    }
    out
}

#[test]
fn a_version_1_database_migrates_to_the_shape_of_a_fresh_one_and_keeps_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("v1.db");
    {
        let conn = Connection::open(&old).unwrap();
        conn.execute_batch(include_str!("../../tests/fixtures/schema_v1.sql"))
            .unwrap();
        conn.execute_batch(&format!(
            "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = 1;
             INSERT INTO settings (key, value, updated_at) VALUES ('kept', '1', '2026-01-01T00:00:00Z');"
        ))
        .unwrap();
    }
    let store = Store::open(&old).unwrap();
    let (version, kept, migrated) = store
        .write_blocking(|tx| {
            let version: i32 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
            let kept: String =
                tx.query_row("SELECT value FROM settings WHERE key = 'kept'", [], |r| {
                    r.get(0)
                })?;
            Ok((version, kept, shape(tx)))
        })
        .unwrap();
    assert_eq!((version, kept.as_str()), (SCHEMA_VERSION, "1"));
    let fresh = Store::open(&dir.path().join("fresh.db")).unwrap();
    let expected = fresh.write_blocking(|tx| Ok(shape(tx))).unwrap();
    assert_eq!(migrated, expected);
}

#[test]
fn a_version_7_database_rekeys_its_messages_and_keeps_them_with_their_callbacks() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("v7.db");
    {
        let conn = Connection::open(&old).unwrap();
        conn.execute_batch(include_str!("../../tests/fixtures/schema_v7.sql"))
            .unwrap();
        conn.execute_batch(&format!(
            "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = 7;"
        ))
        .unwrap();
        // The sender is the second agent, so the keys differ from the order of the ids.
        agents::insert(&conn, &test_agent("r0", "A-0"), "k0", None).unwrap();
        agents::insert(&conn, &test_agent("s", "A-1"), "ks", None).unwrap();
        agents::insert(&conn, &test_agent("r", "A-2"), "kr", None).unwrap();
        for (sequence, id, client) in [(1, "m1", "c1"), (2, "m2", "c2")] {
            conn.execute(
                "INSERT INTO messages (id, recipient_id, sequence, sender_id, sender_handle,
                    recipient_handle, client_message_id, body, created_at, receipt)
                 VALUES (?1, 'r', ?2, 's', 'A-1', 'A-2', ?3, 'hi', 't0', '{}')",
                params![id, sequence, client],
            )
            .unwrap();
        }
        conn.execute_batch(
            "INSERT INTO message_journal (message_id, sender_handle, recipient_handle,
                accepted_at, body_digest, receipt) VALUES ('m1', 'A-1', 'A-2', 't0', 'sha256:x', '{}');
             INSERT INTO callback_deliveries (id, agent_id, message_id, url, status, created_at, updated_at)
             VALUES ('d', 'r', 'm2', 'https://example.com/hook', 'pending', 't0', 't0');",
        )
        .unwrap();
    }
    let store = Store::open(&old).unwrap();
    let (version, inbox, repeat, next, keys, deliveries, migrated) = store
        .write_blocking(|tx| {
            let version: i32 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
            let keys: Vec<(i64, i64)> = tx
                .prepare("SELECT recipient_seq, sender_seq FROM messages ORDER BY seq")?
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<_>>()?;
            let deliveries: i64 =
                tx.query_row("SELECT count(*) FROM callback_deliveries", [], |r| r.get(0))?;
            Ok((
                version,
                messages::inbox(tx, "r", 0, 10)?,
                messages::find_by_client_id(tx, "s", "c2")?,
                messages::next_sequence(tx, "r")?,
                keys,
                deliveries,
                shape(tx),
            ))
        })
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    assert_eq!(keys, vec![(3, 2), (3, 2)], "keyed by the agents' seq");
    let ids: Vec<&str> = inbox.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["m1", "m2"]);
    assert_eq!(repeat.map(|m| m.id).as_deref(), Some("m2"));
    assert_eq!((next, deliveries), (3, 1));
    let fresh = Store::open(&dir.path().join("fresh.db")).unwrap();
    let expected = fresh.write_blocking(|tx| Ok(shape(tx))).unwrap();
    assert_eq!(migrated, expected);
    // Foreign keys are on again once the steps have run.
    let foreign_keys: i64 = store
        .write_blocking(|tx| Ok(tx.query_row("PRAGMA foreign_keys", [], |r| r.get(0))?))
        .unwrap();
    assert_eq!(foreign_keys, 1);
}

#[test]
fn a_version_8_database_gains_an_empty_transparency_log_that_appends() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("v8.db");
    {
        let conn = Connection::open(&old).unwrap();
        conn.execute_batch(include_str!("../../tests/fixtures/schema_v8.sql"))
            .unwrap();
        conn.execute_batch(&format!(
            "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = 8;"
        ))
        .unwrap();
        settings::put(&conn, "kept", &serde_json::json!(1), "t0").unwrap();
    }
    let store = Store::open(&old).unwrap();
    let (version, kept, before, index, after, migrated) = store
        .write_blocking(|tx| {
            let version: i32 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
            let kept = settings::get(tx, "kept")?;
            let before = tlog::size(tx)?;
            let index = tlog::append(tx, "test:1", "test", r#"{"a":1}"#)?;
            Ok((version, kept, before, index, tlog::size(tx)?, shape(tx)))
        })
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    assert_eq!(kept, Some(serde_json::json!(1)));
    assert_eq!((before, index, after), (0, 0, 1));
    let fresh = Store::open(&dir.path().join("fresh.db")).unwrap();
    let expected = fresh.write_blocking(|tx| Ok(shape(tx))).unwrap();
    assert_eq!(migrated, expected);
}

#[test]
fn foreign_database_is_refused_and_left_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.db");
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA application_id = 42; CREATE TABLE t(x); INSERT INTO t VALUES (1);",
        )
        .unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let error = Store::open(&path).err().unwrap();
    assert!(error.to_string().contains("another application"), "{error}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn a_failing_write_rolls_back_alone_while_the_others_commit() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("w.db")).unwrap();
    store
        .write_blocking(|tx| Ok(tx.execute_batch("CREATE TABLE t (n INTEGER)")?))
        .unwrap();
    let threads: Vec<_> = (0..64)
        .map(|n| {
            let store = store.clone();
            std::thread::spawn(move || {
                store.write_blocking(move |tx| {
                    tx.execute("INSERT INTO t (n) VALUES (?1)", [n])?;
                    if n % 2 == 1 {
                        return Err(Error::invalid("odd numbers fail after writing"));
                    }
                    Ok(())
                })
            })
        })
        .collect();
    let failures = threads
        .into_iter()
        .map(|t| t.join().unwrap())
        .filter(Result::is_err)
        .count();
    assert_eq!(failures, 32);
    let stored: Vec<i64> = {
        let conn = store.test_reader();
        let mut stmt = conn.prepare("SELECT n FROM t ORDER BY n").unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    };
    assert_eq!(stored, (0..64).filter(|n| n % 2 == 0).collect::<Vec<i64>>());
}

#[test]
fn a_panicking_write_is_rolled_back_and_the_writer_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("p.db")).unwrap();
    store
        .write_blocking(|tx| Ok(tx.execute_batch("CREATE TABLE t (n INTEGER)")?))
        .unwrap();
    let panicked = store.write_blocking(|tx| -> Result<()> {
        tx.execute("INSERT INTO t (n) VALUES (1)", [])?;
        panic!("a bug in a write job");
    });
    assert!(panicked.is_err());
    store
        .write_blocking(|tx| Ok(tx.execute("INSERT INTO t (n) VALUES (2)", [])?))
        .unwrap();
    let conn = store.test_reader();
    let stored: Vec<i64> = conn
        .prepare("SELECT n FROM t")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(stored, [2]);
}

#[test]
fn newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.db");
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(&format!(
            "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = 99; CREATE TABLE t(x);"
        ))
        .unwrap();
    }
    let error = Store::open(&path).err().unwrap();
    assert!(error.to_string().contains("newer"), "{error}");
}

#[test]
fn fresh_database_is_stamped_and_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.db");
    drop(Store::open(&path).unwrap());
    let store = Store::open(&path).unwrap();
    let conn = store.test_reader();
    let id: i32 = conn
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .unwrap();
    assert_eq!(id, APPLICATION_ID);
}

#[test]
fn a_version_8_database_gains_spending_policies_and_keeps_its_purchases_shape() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("v8.db");
    {
        let conn = Connection::open(&old).unwrap();
        conn.execute_batch(include_str!("../../tests/fixtures/schema_v8.sql"))
            .unwrap();
        conn.execute_batch(&format!(
            "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = 8;"
        ))
        .unwrap();
        agents::insert(&conn, &test_agent("a", "A-1"), "k", None).unwrap();
    }
    let store = Store::open(&old).unwrap();
    let (version, policy, migrated) = store
        .write_blocking(|tx| {
            let version: i32 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
            spending::upsert(
                tx,
                &spending::PolicyRow {
                    agent_id: "a".into(),
                    daily_cents: Some(100),
                    updated_at: "t0".into(),
                    ..spending::PolicyRow::default()
                },
            )?;
            Ok((version, spending::find(tx, "a")?, shape(tx)))
        })
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    assert_eq!(policy.and_then(|p| p.daily_cents), Some(100));
    let fresh = Store::open(&dir.path().join("fresh.db")).unwrap();
    let expected = fresh.write_blocking(|tx| Ok(shape(tx))).unwrap();
    assert_eq!(migrated, expected);
}

#[test]
fn a_version_10_database_rebuilds_purchases_for_approvals_and_keeps_their_rows() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("v10.db");
    {
        let conn = Connection::open(&old).unwrap();
        conn.execute_batch(include_str!("../../tests/fixtures/schema_v10.sql"))
            .unwrap();
        conn.execute_batch(&format!(
            "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = 10;"
        ))
        .unwrap();
        agents::insert(&conn, &test_agent("a", "A-1"), "k", None).unwrap();
        agents::insert(&conn, &test_agent("s", "S-1"), "k2", None).unwrap();
        conn.execute_batch(
            "INSERT INTO categories (slug, name, icon, class, description, position)
                 VALUES ('c', 'C', 'i', 'x', 'd', 0);
             INSERT INTO verticals (slug, name, icon, category, is_external, position)
                 VALUES ('v', 'V', 'i', 'c', 0, 0);
             INSERT INTO listings (id, seller_id, seller_code, seller_reputation, vertical_slug,
                 category, title, description, price_cents, listing_type, active, fingerprint,
                 preview, images, metadata, quality, created_at)
                 VALUES ('l', 's', 'S-000001', 0, 'v', 'c', 't', 'd', 700, 'standard', 1, 'f',
                 '', '[]', '{}', 0, 't0');
             INSERT INTO purchases (id, listing_id, buyer_id, seller_id, status, amount_cents,
                 platform_fee_cents, seller_net_cents, fee_bps, schedule_version, rail,
                 created_at, receipt, key_id)
                 VALUES ('p1', 'l', 'a', 's', 'paid', 700, 0, 0, 0, 1, 'sandbox', 't0', '{}', 'k');
             INSERT INTO refunds (payment_ref, purchase_id, amount_cents, status, created_at)
                 VALUES ('pi_1', 'p1', 700, 'pending', 't1');",
        )
        .unwrap();
    }
    let store = Store::open(&old).unwrap();
    let (version, migrated, row) = store
        .write_blocking(|tx| {
            let version: i32 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
            let row: (String, i64, String) = tx.query_row(
                "SELECT p.status, p.amount_cents, r.payment_ref FROM purchases p
                 JOIN refunds r ON r.purchase_id = p.id WHERE p.id = 'p1'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?;
            // The new state is accepted.
            tx.execute(
                "UPDATE purchases SET status = 'pending_approval' WHERE id = 'p1'",
                [],
            )?;
            Ok((version, shape(tx), row))
        })
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    assert_eq!(row, ("paid".to_owned(), 700, "pi_1".to_owned()));
    let fresh = Store::open(&dir.path().join("fresh.db")).unwrap();
    let expected = fresh.write_blocking(|tx| Ok(shape(tx))).unwrap();
    assert_eq!(migrated, expected);
}

#[test]
fn a_version_11_database_rebuilds_callback_deliveries_for_decisions_and_keeps_their_rows() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("v11.db");
    {
        let conn = Connection::open(&old).unwrap();
        conn.execute_batch(include_str!("../../tests/fixtures/schema_v11.sql"))
            .unwrap();
        conn.execute_batch(&format!(
            "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = 11;"
        ))
        .unwrap();
        agents::insert(&conn, &test_agent("s", "A-1"), "ks", None).unwrap();
        agents::insert(&conn, &test_agent("r", "A-2"), "kr", None).unwrap();
        conn.execute_batch(
            "INSERT INTO messages (id, recipient_id, recipient_seq, sequence, sender_id, sender_seq,
                 sender_handle, recipient_handle, client_message_id, body, created_at, receipt)
             VALUES ('m1', 'r', 2, 1, 's', 1, 'A-1', 'A-2', 'c1', 'hi', 't0', '{}');
             INSERT INTO callback_deliveries (id, agent_id, message_id, url, status, attempts,
                 created_at, updated_at)
             VALUES ('d', 'r', 'm1', 'https://example.com/hook', 'dead', 5, 't0', 't1');",
        )
        .unwrap();
    }
    let store = Store::open(&old).unwrap();
    let (version, kept, migrated) = store
        .write_blocking(|tx| {
            let version: i32 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
            Ok((version, messages::find_delivery(tx, "d")?, shape(tx)))
        })
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    let kept = kept.unwrap();
    assert_eq!(
        (
            kept.event.as_str(),
            kept.message_id.as_deref(),
            kept.purchase_id
        ),
        ("agent.message", Some("m1"), None)
    );
    assert_eq!((kept.status.as_str(), kept.attempts), ("dead", 5));
    let fresh = Store::open(&dir.path().join("fresh.db")).unwrap();
    let expected = fresh.write_blocking(|tx| Ok(shape(tx))).unwrap();
    assert_eq!(migrated, expected);
}

#[test]
fn a_version_12_database_gains_the_index_that_finds_due_checkouts_by_expiry() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("v12.db");
    {
        let conn = Connection::open(&old).unwrap();
        conn.execute_batch(include_str!("../../tests/fixtures/schema_v12.sql"))
            .unwrap();
        conn.execute_batch(&format!(
            "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = 12;"
        ))
        .unwrap();
    }
    let store = Store::open(&old).unwrap();
    let (version, migrated, plan) = store
        .write_blocking(|tx| {
            let version: i32 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
            let plan: String = tx.query_row(
                "EXPLAIN QUERY PLAN UPDATE purchases SET status = 'expired'
                 WHERE status = 'pending_payment' AND expires_at <= 'x'",
                [],
                |r| r.get(3),
            )?;
            Ok((version, shape(tx), plan))
        })
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    // A search of the expiry index, not a scan of every open checkout.
    assert!(
        plan.starts_with("SEARCH") && plan.contains("purchases_pending_expiry"),
        "{plan}"
    );
    let fresh = Store::open(&dir.path().join("fresh.db")).unwrap();
    let expected = fresh.write_blocking(|tx| Ok(shape(tx))).unwrap();
    assert_eq!(migrated, expected);
}
