-- bourse schema, version 1. Applied once to a new database; later versions add numbered steps
-- in src/store/mod.rs and bump PRAGMA user_version. PRAGMAs are set per connection in code.

-- Agents. The API key is never stored: only SHA-256 of it (keys carry 256 bits of entropy, so a
-- slow hash would add nothing). `handle` is public and stable for life.
CREATE TABLE agents (
    seq            INTEGER PRIMARY KEY,
    id             TEXT    NOT NULL UNIQUE,
    handle         TEXT    NOT NULL UNIQUE,
    name           TEXT    NOT NULL,
    display_name   TEXT,
    email          TEXT,
    callback_url   TEXT,
    key_hash       TEXT    NOT NULL UNIQUE,
    created_at     TEXT    NOT NULL,
    updated_at     TEXT    NOT NULL,
    key_rotated_at TEXT
) STRICT;

CREATE INDEX agents_display_name ON agents (display_name) WHERE display_name IS NOT NULL;

-- Operator settings and instance facts (chair binding, provenance, instance creation time).
-- `value` is JSON.
CREATE TABLE settings (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_at TEXT NOT NULL
) STRICT;
