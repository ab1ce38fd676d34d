//! The taxonomy's tables (`categories`, `verticals`), which listings reference.

use rusqlite::{Connection, params};

use crate::error::Result;

/// A macro-category as stored.
pub struct CategoryRow<'a> {
    pub slug: &'a str,
    pub name: &'a str,
    pub icon: &'a str,
    pub class: &'a str,
    pub description: &'a str,
    pub position: i64,
}

/// A vertical as stored.
pub struct VerticalRow<'a> {
    pub slug: &'a str,
    pub name: &'a str,
    pub icon: &'a str,
    pub category: &'a str,
    pub is_external: bool,
    pub position: i64,
}

/// Inserts or updates categories by slug (never deletes).
///
/// # Errors
/// Database failure.
pub fn upsert_categories(conn: &Connection, rows: &[CategoryRow<'_>]) -> Result<()> {
    let mut stmt = conn.prepare_cached(
        "INSERT INTO categories (slug, name, icon, class, description, position) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (slug) DO UPDATE SET name = excluded.name, icon = excluded.icon, class = excluded.class,
             description = excluded.description, position = excluded.position",
    )?;
    for c in rows {
        stmt.execute(params![
            c.slug,
            c.name,
            c.icon,
            c.class,
            c.description,
            c.position
        ])?;
    }
    Ok(())
}

/// Inserts or updates verticals by slug (never deletes); their categories must exist.
///
/// # Errors
/// Database failure.
pub fn upsert_verticals(conn: &Connection, rows: &[VerticalRow<'_>]) -> Result<()> {
    let mut stmt = conn.prepare_cached(
        "INSERT INTO verticals (slug, name, icon, category, is_external, position) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (slug) DO UPDATE SET name = excluded.name, icon = excluded.icon, category = excluded.category,
             is_external = excluded.is_external, position = excluded.position",
    )?;
    for v in rows {
        stmt.execute(params![
            v.slug,
            v.name,
            v.icon,
            v.category,
            v.is_external,
            v.position
        ])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeding_twice_updates_in_place() {
        let conn = crate::store::test_db();
        let category = |name| CategoryRow {
            slug: "data",
            name,
            icon: "d",
            class: "RESEARCH",
            description: "about data",
            position: 0,
        };
        let vertical = |position| VerticalRow {
            slug: "general",
            name: "General",
            icon: "g",
            category: "data",
            is_external: false,
            position,
        };
        upsert_categories(&conn, &[category("Data")]).unwrap();
        upsert_verticals(&conn, &[vertical(0)]).unwrap();
        upsert_categories(&conn, &[category("Datasets")]).unwrap();
        upsert_verticals(&conn, &[vertical(7)]).unwrap();
        let stored: (String, i64, i64) = conn
            .query_row(
                "SELECT c.name, v.position, (SELECT count(*) FROM verticals)
                 FROM categories c JOIN verticals v ON v.category = c.slug",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        assert_eq!(stored, ("Datasets".into(), 7, 1));
        let orphan = VerticalRow {
            category: "nowhere",
            ..vertical(1)
        };
        assert!(upsert_verticals(&conn, &[orphan]).is_err());
    }
}
