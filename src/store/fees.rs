//! Announced fee-schedule changes (`fee_announcements`).

use rusqlite::{Connection, params};

use crate::error::Result;

/// One announced schedule change; `schedule` is JSON text.
#[derive(Clone, Debug, PartialEq)]
pub struct Announcement {
    pub version: i64,
    pub announced_at: String,
    pub effective_from: String,
    pub schedule: String,
    pub note: Option<String>,
}

/// Every announcement, by version.
///
/// # Errors
/// Database failure.
pub fn announcements(conn: &Connection) -> Result<Vec<Announcement>> {
    let mut stmt = conn.prepare_cached(
        "SELECT version, announced_at, effective_from, schedule, note FROM fee_announcements ORDER BY version",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok(Announcement {
            version: r.get(0)?,
            announced_at: r.get(1)?,
            effective_from: r.get(2)?,
            schedule: r.get(3)?,
            note: r.get(4)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The version the next announcement gets: one past the highest announced, and past `live`
/// (the live schedule's version) in any case.
///
/// # Errors
/// Database failure.
pub fn next_version(conn: &Connection, live: i64) -> Result<i64> {
    Ok(conn
        .prepare_cached(
            "SELECT max(coalesce((SELECT max(version) FROM fee_announcements), ?1), ?1) + 1",
        )?
        .query_row([live], |r| r.get(0))?)
}

/// Stores an announcement.
///
/// # Errors
/// Database failure (including a version already announced).
pub fn insert(conn: &Connection, a: &Announcement) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO fee_announcements (version, announced_at, effective_from, schedule, note) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![a.version, a.announced_at, a.effective_from, a.schedule, a.note])?;
    let schedule: serde_json::Value =
        serde_json::from_str(&a.schedule).unwrap_or_else(|_| a.schedule.clone().into());
    let announcement = serde_json::json!({
        "type": "bourse.fees.announcement",
        "version": a.version,
        "announcedAt": a.announced_at,
        "effectiveFrom": a.effective_from,
        "schedule": schedule,
        "note": a.note,
    });
    super::tlog::append_value(
        conn,
        &format!("fees:{}", a.version),
        "bourse.fees.announcement",
        &announcement,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_follow_the_live_schedule_and_each_other() {
        let conn = crate::store::test_db();
        assert_eq!(next_version(&conn, 1).unwrap(), 2);
        let first = Announcement {
            version: 2,
            announced_at: "2027-07-01T00:00:00Z".into(),
            effective_from: "2027-09-01".into(),
            schedule: "{\"bps\":400}".into(),
            note: None,
        };
        insert(&conn, &first).unwrap();
        assert!(
            insert(&conn, &first).is_err(),
            "a version is announced once"
        );
        assert_eq!(next_version(&conn, 1).unwrap(), 3);
        assert_eq!(next_version(&conn, 5).unwrap(), 6);
        assert_eq!(announcements(&conn).unwrap(), [first]);
    }
}
