//! What the public proofs read: the demand ledger with each side's party, the operator's party
//! classification (`parties`), settled-sale totals and the independent sellers. Rows only; the
//! derived figures (parties of rows, buyer labels, totals) are `service::ledger`'s,
//! `service::disclosure::proof`'s and `service::disclosure::participation`'s.

use rusqlite::{Connection, OptionalExtension, params};

use crate::error::Result;

/// One ledger row joined to its purchase and the stored class of each side (`None`: the agent
/// has no `parties` row).
#[derive(Clone, Debug, PartialEq)]
pub struct LedgerEntry {
    pub id: String,
    pub seller_code: String,
    pub seller_id: String,
    pub buyer_id: Option<String>,
    pub vertical_slug: String,
    pub amount_cents: i64,
    pub platform_fee_cents: i64,
    pub rail: String,
    pub status: String,
    pub is_reference: bool,
    pub created_at: String,
    pub release_at: Option<String>,
    pub seller_party: Option<String>,
    pub buyer_party: Option<String>,
}

/// Every ledger row, oldest first.
///
/// # Errors
/// Database failure.
pub fn ledger(conn: &Connection) -> Result<Vec<LedgerEntry>> {
    let mut stmt = conn.prepare_cached(
        "SELECT l.id, l.seller_code, p.seller_id, p.buyer_id, l.vertical_slug, l.amount_cents,
                l.platform_fee_cents, l.rail, l.status, l.is_reference_listing, l.created_at,
                l.release_at, sp.party, bp.party
         FROM ledger l
         JOIN purchases p ON p.id = l.purchase_id
         LEFT JOIN parties sp ON sp.agent_id = p.seller_id
         LEFT JOIN parties bp ON bp.agent_id = p.buyer_id
         ORDER BY l.seq",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok(LedgerEntry {
            id: r.get(0)?,
            seller_code: r.get(1)?,
            seller_id: r.get(2)?,
            buyer_id: r.get(3)?,
            vertical_slug: r.get(4)?,
            amount_cents: r.get(5)?,
            platform_fee_cents: r.get(6)?,
            rail: r.get(7)?,
            status: r.get(8)?,
            is_reference: r.get(9)?,
            created_at: r.get(10)?,
            release_at: r.get(11)?,
            seller_party: r.get(12)?,
            buyer_party: r.get(13)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Whether the operator has classified any agent into a class other than `unclassified`.
///
/// # Errors
/// Database failure.
pub fn any_classified(conn: &Connection) -> Result<bool> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM parties WHERE party <> 'unclassified' LIMIT 1")?
        .query_row([], |_| Ok(()))
        .optional()?
        .is_some())
}

/// An agent's stored class (`None`: never classified).
///
/// # Errors
/// Database failure.
pub fn party_of(conn: &Connection, agent_id: &str) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached("SELECT party FROM parties WHERE agent_id = ?1")?
        .query_row([agent_id], |r| r.get(0))
        .optional()?)
}

/// Classifies an agent (replacing any earlier class).
///
/// # Errors
/// Database failure (including a class the schema does not know).
pub fn set_party(conn: &Connection, agent_id: &str, party: &str, now: &str) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO parties (agent_id, party, classified_at) VALUES (?1, ?2, ?3)
         ON CONFLICT (agent_id) DO UPDATE SET party = excluded.party, classified_at = excluded.classified_at",
    )?
    .execute(params![agent_id, party, now])?;
    Ok(())
}

/// Ledger rows outside reference listings, and the sum of their platform fees.
///
/// # Errors
/// Database failure.
pub fn settled_sales(conn: &Connection) -> Result<(i64, i64)> {
    Ok(conn
        .prepare_cached(
            "SELECT count(*), coalesce(sum(platform_fee_cents), 0) FROM ledger WHERE is_reference_listing = 0",
        )?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))?)
}

/// An agent that may count as an independent seller, with its first non-sample listing.
#[derive(Clone, Debug, PartialEq)]
pub struct IndependentSeller {
    pub id: String,
    /// Display name, else handle.
    pub name: String,
    pub first_listed_at: String,
    pub first_listing_id: String,
    pub first_listing_title: String,
    /// Active non-sample listings.
    pub live_listings: i64,
}

/// Agents that are not the house seller and not classified into a class other than
/// `unclassified`, with at least one non-sample listing; by their first such listing, oldest
/// first.
///
/// # Errors
/// Database failure.
pub fn independent_sellers(conn: &Connection) -> Result<Vec<IndependentSeller>> {
    let mut stmt = conn.prepare_cached(
        "SELECT a.id, coalesce(a.display_name, a.handle), f.created_at, f.id, f.title,
                (SELECT count(*) FROM listings x
                 WHERE x.seller_id = a.id AND x.active = 1 AND x.is_sample = 0)
         FROM agents a
         JOIN listings f ON f.id = (
             SELECT l.id FROM listings l WHERE l.seller_id = a.id AND l.is_sample = 0
             ORDER BY l.created_at, l.id LIMIT 1)
         WHERE a.id NOT IN (
             SELECT id FROM agents WHERE is_house = 1
             UNION SELECT agent_id FROM parties WHERE party <> 'unclassified')
         ORDER BY f.created_at, a.id",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok(IndependentSeller {
            id: r.get(0)?,
            name: r.get(1)?,
            first_listed_at: r.get(2)?,
            first_listing_id: r.get(3)?,
            first_listing_title: r.get(4)?,
            live_listings: r.get(5)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{agents, test_agent, test_db};

    /// Agents a (seller), b (buyer), h (house); one vertical; listings and sales as SQL.
    fn market() -> Connection {
        let conn = test_db();
        agents::insert(&conn, &test_agent("a", "A-1"), "ka", None).unwrap();
        agents::insert(&conn, &test_agent("b", "A-2"), "kb", None).unwrap();
        agents::insert_house(&conn, &test_agent("h", "A-H"), "kh", None).unwrap();
        conn.execute_batch(
            "INSERT INTO categories VALUES ('data', 'Data', 'd', 'RESEARCH', 'data', 0);
             INSERT INTO verticals VALUES ('general', 'General', 'g', 'data', 0, 0);
             INSERT INTO listings (id, seller_id, seller_code, seller_reputation, vertical_slug, category,
                 title, description, price_cents, listing_type, active, fingerprint, preview, images,
                 metadata, is_sample, quality, created_at)
             VALUES
                 ('la', 'a', 'S-000001', 2.4, 'general', 'data', 'First', 'd', 500, 'standard', 1, 'f', '{}', '[]', '{}', 0, 3.0, '2026-01-02T00:00:00Z'),
                 ('la2', 'a', 'S-000001', 2.4, 'general', 'data', 'Second', 'd', 0, 'standard', 0, 'f', '{}', '[]', '{}', 0, 3.0, '2026-01-03T00:00:00Z'),
                 ('ls', 'h', 'S-000002', 2.4, 'general', 'data', 'Sample', 'd', 0, 'standard', 1, 'f', '{}', '[]', '{}', 1, 3.0, '2026-01-01T00:00:00Z');
             INSERT INTO purchases (id, listing_id, buyer_id, seller_id, status, amount_cents,
                 platform_fee_cents, seller_net_cents, fee_bps, schedule_version, rail, created_at, receipt)
             VALUES
                 ('p1', 'la', 'b', 'a', 'paid', 500, 25, 475, 500, 1, 'checkout', '2026-01-04T00:00:00Z', '{}'),
                 ('p2', 'ls', 'b', 'h', 'paid', 0, 0, 0, 0, 1, 'free', '2026-01-05T00:00:00Z', '{}');
             INSERT INTO ledger (id, purchase_id, seller_code, vertical_slug, amount_cents,
                 platform_fee_cents, rail, status, is_reference_listing, created_at, release_at)
             VALUES
                 ('g1', 'p1', 'S-000001', 'general', 500, 25, 'checkout', 'held', 0, '2026-01-04T00:00:00Z', NULL),
                 ('g2', 'p2', 'S-000002', 'general', 0, 0, 'checkout', 'released', 1, '2026-01-05T00:00:00Z', NULL);",
        )
        .unwrap();
        conn
    }

    #[test]
    fn the_ledger_carries_each_sides_class_and_totals_skip_reference_rows() {
        let conn = market();
        let rows = ledger(&conn).unwrap();
        assert_eq!(
            rows.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
            ["g1", "g2"]
        );
        assert_eq!(rows[0].seller_id, "a");
        assert_eq!(rows[0].buyer_id.as_deref(), Some("b"));
        assert!(!rows[0].is_reference && rows[1].is_reference);
        assert_eq!(
            (rows[0].seller_party.clone(), rows[0].buyer_party.clone()),
            (None, None)
        );
        assert_eq!(settled_sales(&conn).unwrap(), (1, 25));

        assert!(!any_classified(&conn).unwrap());
        set_party(&conn, "b", "unclassified", "t1").unwrap();
        assert!(!any_classified(&conn).unwrap());
        set_party(&conn, "b", "house_buyer", "t2").unwrap();
        assert!(any_classified(&conn).unwrap());
        assert_eq!(
            party_of(&conn, "b").unwrap().as_deref(),
            Some("house_buyer")
        );
        assert_eq!(party_of(&conn, "a").unwrap(), None);
        assert!(set_party(&conn, "a", "arms_length", "t3").is_err());
        assert_eq!(
            ledger(&conn).unwrap()[0].buyer_party.as_deref(),
            Some("house_buyer")
        );
    }

    #[test]
    fn independent_sellers_exclude_the_house_and_classified_agents() {
        let conn = market();
        let sellers = independent_sellers(&conn).unwrap();
        assert_eq!(
            sellers,
            [IndependentSeller {
                id: "a".into(),
                name: "A-1".into(),
                first_listed_at: "2026-01-02T00:00:00Z".into(),
                first_listing_id: "la".into(),
                first_listing_title: "First".into(),
                live_listings: 1,
            }]
        );
        set_party(&conn, "a", "affiliated", "t").unwrap();
        assert!(independent_sellers(&conn).unwrap().is_empty());
        set_party(&conn, "a", "unclassified", "t").unwrap();
        assert_eq!(independent_sellers(&conn).unwrap().len(), 1);
    }
}
