//! Schema creation and migration: `schema.sql` is always the newest schema; [`STEPS`] bring an
//! older file to the same shape, one transaction per version (the test
//! `a_version_1_database_migrates_to_the_shape_of_a_fresh_one_and_keeps_its_rows` checks it).

use std::path::Path;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

use super::{APPLICATION_ID, SCHEMA_VERSION};
use crate::error::{Error, Result};

pub(super) const SCHEMA: &str = include_str!("../../schema.sql");

/// Reads the header stamps without writing anything.
pub(super) fn check_identity(conn: &Connection, path: &Path) -> Result<()> {
    let refuse = |why: String| Error::Internal(format!("refusing {}: {why}", path.display()));
    let application_id: i32 = conn
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .map_err(|e| refuse(format!("not a readable SQLite database ({e})")))?;
    let version: i32 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let objects: i64 = conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))?;
    if application_id == 0 && version == 0 && objects == 0 {
        return Ok(()); // a new, empty file
    }
    if application_id != APPLICATION_ID {
        return Err(refuse(format!(
            "application_id is {application_id:#x}, not bourse's {APPLICATION_ID:#x}; it belongs to another application"
        )));
    }
    if version > SCHEMA_VERSION {
        return Err(refuse(format!(
            "schema version {version} is newer than this binary's {SCHEMA_VERSION}; upgrade bourse"
        )));
    }
    Ok(())
}

pub(super) fn migrate(conn: &mut Connection) -> Result<()> {
    let version: i32 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version == 0 {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute_batch(SCHEMA)?;
        tx.execute_batch(&format!(
            "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {SCHEMA_VERSION};"
        ))?;
        tx.commit()?;
    }
    // A database made by an earlier release: one step per version, each in its own transaction.
    // `schema.sql` is always the newest schema; the steps bring an older file to the same shape
    // (`migration_matches_a_fresh_database` checks that).
    // Foreign keys are off while steps run (a step may rebuild a table others refer to; the
    // setting cannot change inside a transaction), and each step checks them before it commits.
    let due = version != 0 && STEPS.iter().any(|(target, _)| version < *target);
    if due {
        conn.execute_batch("PRAGMA foreign_keys = OFF;")?;
    }
    for (target, step) in STEPS {
        if version != 0 && version < *target {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.execute_batch(step)?;
            let broken: Option<String> = tx
                .query_row("PRAGMA foreign_key_check", [], |r| r.get(0))
                .optional()?;
            if let Some(table) = broken {
                return Err(Error::Internal(format!(
                    "migration to version {target} left a dangling reference in {table}"
                )));
            }
            tx.execute_batch(&format!("PRAGMA user_version = {target};"))?;
            tx.commit()?;
        }
    }
    if due {
        conn.execute_batch("PRAGMA foreign_keys = ON;")?;
    }
    Ok(())
}

/// Migration steps: (the version a step produces, its SQL).
const STEPS: &[(i32, &str)] = &[
    (
        2,
        "ALTER TABLE purchases ADD COLUMN checkout_url TEXT;
         ALTER TABLE purchases ADD COLUMN payment_ref TEXT;
         ALTER TABLE purchases ADD COLUMN payer TEXT;
         CREATE UNIQUE INDEX purchases_payment_ref ON purchases (payment_ref) WHERE payment_ref IS NOT NULL;
         ALTER TABLE ledger ADD COLUMN payout_ref TEXT;
         ALTER TABLE ledger ADD COLUMN payout_attempts INTEGER NOT NULL DEFAULT 0;
         ALTER TABLE ledger ADD COLUMN payout_retry_at TEXT;
         ALTER TABLE ledger ADD COLUMN payout_error TEXT;
         ALTER TABLE payout_accounts ADD COLUMN rail TEXT NOT NULL DEFAULT 'sandbox';
         ALTER TABLE payout_accounts ADD COLUMN account_ref TEXT;
         CREATE TABLE webhook_events (
             id          TEXT PRIMARY KEY,
             type        TEXT NOT NULL,
             received_at TEXT NOT NULL
         ) STRICT;",
    ),
    (
        3,
        "CREATE TABLE refunds (
             payment_ref  TEXT    PRIMARY KEY,
             purchase_id  TEXT    NOT NULL REFERENCES purchases (id),
             amount_cents INTEGER NOT NULL,
             status       TEXT    NOT NULL CHECK (status IN ('pending', 'refunded')),
             refund_ref   TEXT,
             attempts     INTEGER NOT NULL DEFAULT 0,
             retry_at     TEXT,
             error        TEXT,
             created_at   TEXT    NOT NULL,
             refunded_at  TEXT
         ) STRICT;
         CREATE INDEX refunds_due ON refunds (retry_at) WHERE status = 'pending';
         CREATE INDEX refunds_purchase ON refunds (purchase_id);
         ALTER TABLE ledger ADD COLUMN payout_source TEXT;
         -- Transfers already attempted by an earlier release went without a source: their
         -- retries keep it that way (same parameters under the same key).
         UPDATE ledger SET payout_source = 'none' WHERE status = 'held' AND payout_error IS NOT NULL;",
    ),
    (
        4,
        "ALTER TABLE agents ADD COLUMN display_skeleton TEXT;
         CREATE INDEX agents_display_skeleton ON agents (display_skeleton) WHERE display_skeleton IS NOT NULL;",
    ),
    (
        5,
        "CREATE TABLE oauth_clients (
             client_id     TEXT PRIMARY KEY,
             kind          TEXT NOT NULL CHECK (kind IN ('registered', 'metadata')),
             name          TEXT NOT NULL,
             client_uri    TEXT,
             redirect_uris TEXT NOT NULL,
             auth_method   TEXT NOT NULL CHECK (auth_method IN ('none', 'client_secret_post', 'client_secret_basic')),
             secret_hash   TEXT,
             created_at    TEXT NOT NULL,
             fetched_at    TEXT,
             revoked_at    TEXT
         ) STRICT;
         CREATE TABLE oauth_grants (
             id         TEXT PRIMARY KEY,
             client_id  TEXT NOT NULL REFERENCES oauth_clients (client_id),
             agent_id   TEXT NOT NULL REFERENCES agents (id),
             scopes     TEXT NOT NULL,
             resource   TEXT NOT NULL,
             created_at TEXT NOT NULL,
             used_at    TEXT,
             revoked_at TEXT,
             revoked_by TEXT
         ) STRICT;
         CREATE INDEX oauth_grants_agent ON oauth_grants (agent_id);
         CREATE INDEX oauth_grants_client ON oauth_grants (client_id);
         CREATE TABLE oauth_codes (
             code_hash    TEXT PRIMARY KEY,
             grant_id     TEXT NOT NULL REFERENCES oauth_grants (id),
             redirect_uri TEXT NOT NULL,
             redirect_given INTEGER NOT NULL,
             challenge    TEXT NOT NULL,
             expires_at   TEXT NOT NULL,
             used_at      TEXT
         ) STRICT;
         CREATE INDEX oauth_codes_grant ON oauth_codes (grant_id);
         CREATE INDEX oauth_codes_expiry ON oauth_codes (expires_at);
         CREATE TABLE oauth_tokens (
             token_hash TEXT PRIMARY KEY,
             grant_id   TEXT NOT NULL REFERENCES oauth_grants (id),
             kind       TEXT NOT NULL CHECK (kind IN ('access', 'refresh')),
             scopes     TEXT NOT NULL,
             expires_at TEXT NOT NULL,
             used_at    TEXT,
             revoked_at TEXT
         ) STRICT;
         CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id);
         CREATE INDEX oauth_tokens_expiry ON oauth_tokens (expires_at);",
    ),
    (
        6,
        "ALTER TABLE listings ADD COLUMN changed INTEGER NOT NULL DEFAULT 0;
         CREATE INDEX listings_changed ON listings (changed);
         CREATE TRIGGER listings_changed_insert AFTER INSERT ON listings BEGIN
             UPDATE listings SET changed = (SELECT max(changed) FROM listings) + 1 WHERE seq = new.seq;
         END;
         CREATE TRIGGER listings_changed_update AFTER UPDATE ON listings WHEN new.changed = old.changed
         BEGIN
             UPDATE listings SET changed = (SELECT max(changed) FROM listings) + 1 WHERE seq = new.seq;
         END;",
    ),
    (
        7,
        "CREATE TABLE orders (
             seq         INTEGER PRIMARY KEY,
             -- The task's id, and the id of its purchase once bought.
             id          TEXT    NOT NULL UNIQUE,
             buyer_id    TEXT    NOT NULL REFERENCES agents (id),
             context_id  TEXT    NOT NULL,
             listing_id  TEXT    NOT NULL,
             rail        TEXT    NOT NULL CHECK (rail IN ('card', 'x402')),
             -- The purchase's own members as sent (email, intendedUse, attestation), JSON.
             request     TEXT    NOT NULL,
             status      TEXT    NOT NULL CHECK (status IN ('open', 'canceled')),
             -- The last refused payment (x402), for the buyer to see.
             payment_error TEXT,
             created_at  TEXT    NOT NULL,
             updated_at  TEXT    NOT NULL
         ) STRICT;
         CREATE INDEX orders_buyer ON orders (buyer_id, seq);
         CREATE INDEX orders_context ON orders (buyer_id, context_id, seq);",
    ),
    (
        // The per-agent message indexes keyed by the agents' integer seq (schema.sql says why):
        // the table is rebuilt, since its inline UNIQUE constraints cannot be dropped.
        8,
        "CREATE TABLE messages_v8 (
             seq               INTEGER PRIMARY KEY,
             id                TEXT    NOT NULL UNIQUE,
             recipient_id      TEXT    NOT NULL REFERENCES agents (id),
             sequence          INTEGER NOT NULL,
             sender_id         TEXT    NOT NULL REFERENCES agents (id),
             sender_handle     TEXT    NOT NULL,
             recipient_handle  TEXT    NOT NULL,
             client_message_id TEXT    NOT NULL,
             body              TEXT    NOT NULL,
             created_at        TEXT    NOT NULL,
             receipt           TEXT    NOT NULL,
             recipient_seq     INTEGER NOT NULL,
             sender_seq        INTEGER NOT NULL,
             UNIQUE (recipient_seq, sequence),
             UNIQUE (sender_seq, client_message_id)
         ) STRICT;
         INSERT INTO messages_v8 (seq, id, recipient_id, sequence, sender_id, sender_handle,
             recipient_handle, client_message_id, body, created_at, receipt, recipient_seq, sender_seq)
         SELECT m.seq, m.id, m.recipient_id, m.sequence, m.sender_id, m.sender_handle,
             m.recipient_handle, m.client_message_id, m.body, m.created_at, m.receipt,
             (SELECT a.seq FROM agents a WHERE a.id = m.recipient_id),
             (SELECT a.seq FROM agents a WHERE a.id = m.sender_id)
         FROM messages m ORDER BY m.seq;
         DROP TABLE messages;
         ALTER TABLE messages_v8 RENAME TO messages;",
    ),
    (
        // The transparency log starts empty: artifacts signed before it are not logged.
        9,
        "CREATE TABLE tlog_entries (
             idx   INTEGER PRIMARY KEY,
             ref   TEXT    NOT NULL UNIQUE,
             entry BLOB    NOT NULL
         ) STRICT;
         CREATE TABLE tlog_hashes (
             id   INTEGER PRIMARY KEY,
             hash BLOB    NOT NULL
         ) STRICT;
         CREATE TABLE tlog_checkpoints (
             size      INTEGER PRIMARY KEY,
             root      BLOB    NOT NULL,
             note      TEXT    NOT NULL,
             signed_at TEXT    NOT NULL
         ) STRICT;",
    ),
    (
        // Spending controls: an agent's policy, and what a buyer spent by window.
        10,
        "CREATE TABLE spending_policies (
             agent_id                 TEXT    PRIMARY KEY REFERENCES agents (id),
             per_purchase_cents       INTEGER,
             daily_cents              INTEGER,
             monthly_cents            INTEGER,
             rails                    TEXT,
             categories               TEXT,
             verticals                TEXT,
             approval_threshold_cents INTEGER,
             approval_ttl_secs        INTEGER,
             updated_at               TEXT    NOT NULL
         ) STRICT;
         CREATE INDEX purchases_buyer_created ON purchases (buyer_id, created_at);
         ALTER TABLE purchases ADD COLUMN key_id TEXT;
         ALTER TABLE purchases ADD COLUMN grant_id TEXT;
         ALTER TABLE oauth_grants ADD COLUMN spend_daily_cents INTEGER;
         CREATE TABLE agent_keys (
             id                 TEXT    PRIMARY KEY,
             agent_id           TEXT    NOT NULL REFERENCES agents (id),
             key_hash           TEXT    NOT NULL UNIQUE,
             label              TEXT,
             scopes             TEXT    NOT NULL,
             per_purchase_cents INTEGER,
             daily_cents        INTEGER,
             monthly_cents      INTEGER,
             expires_at         TEXT,
             created_at         TEXT    NOT NULL,
             revoked_at         TEXT
         ) STRICT;
         CREATE INDEX agent_keys_agent ON agent_keys (agent_id);",
    ),
    (
        // Approval above a threshold: purchases gain the states `pending_approval` and `denied`
        // (the table is rebuilt, since a CHECK constraint cannot be altered) and the approvals.
        11,
        "CREATE TABLE purchases_v11 (
             seq                  INTEGER PRIMARY KEY,
             id                   TEXT    NOT NULL UNIQUE,
             listing_id           TEXT    NOT NULL REFERENCES listings (id),
             buyer_id             TEXT    REFERENCES agents (id),
             buyer_handle         TEXT,
             seller_id            TEXT    NOT NULL REFERENCES agents (id),
             status               TEXT    NOT NULL CHECK (status IN ('pending_approval', 'pending_payment', 'paid', 'delivered', 'expired', 'cancelled', 'denied')),
             amount_cents         INTEGER NOT NULL,
             platform_fee_cents   INTEGER NOT NULL,
             seller_net_cents     INTEGER NOT NULL,
             fee_bps              INTEGER NOT NULL,
             schedule_version     INTEGER NOT NULL,
             rail                 TEXT    NOT NULL,
             email                TEXT,
             created_at           TEXT    NOT NULL,
             paid_at              TEXT,
             delivered_at         TEXT,
             delivery_fingerprint TEXT,
             receipt              TEXT    NOT NULL,
             checkout_session     TEXT    UNIQUE,
             expires_at           TEXT,
             shipped_at           TEXT,
             carrier              TEXT,
             tracking             TEXT,
             checkout_url         TEXT,
             payment_ref          TEXT,
             payer                TEXT,
             key_id               TEXT,
             grant_id             TEXT
         ) STRICT;
         INSERT INTO purchases_v11 SELECT seq, id, listing_id, buyer_id, buyer_handle, seller_id,
             status, amount_cents, platform_fee_cents, seller_net_cents, fee_bps, schedule_version,
             rail, email, created_at, paid_at, delivered_at, delivery_fingerprint, receipt,
             checkout_session, expires_at, shipped_at, carrier, tracking, checkout_url, payment_ref,
             payer, key_id, grant_id
         FROM purchases ORDER BY seq;
         DROP TABLE purchases;
         ALTER TABLE purchases_v11 RENAME TO purchases;
         CREATE UNIQUE INDEX purchases_payment_ref ON purchases (payment_ref) WHERE payment_ref IS NOT NULL;
         CREATE INDEX purchases_pending ON purchases (listing_id, expires_at) WHERE status = 'pending_payment';
         CREATE INDEX purchases_buyer ON purchases (buyer_id, seq);
         CREATE INDEX purchases_listing ON purchases (listing_id, status);
         CREATE INDEX purchases_buyer_created ON purchases (buyer_id, created_at);
         CREATE TABLE approvals (
             id_hash     TEXT    PRIMARY KEY,
             purchase_id TEXT    NOT NULL UNIQUE REFERENCES purchases (id),
             buyer_id    TEXT    NOT NULL REFERENCES agents (id),
             created_at  TEXT    NOT NULL,
             expires_at  TEXT    NOT NULL,
             decision    TEXT    CHECK (decision IN ('approved', 'denied', 'expired')),
             decided_at  TEXT
         ) STRICT;
         CREATE INDEX approvals_open ON approvals (expires_at) WHERE decision IS NULL;
         CREATE INDEX approvals_buyer ON approvals (buyer_id, created_at);",
    ),
    (
        // Callbacks of decided approvals: deliveries gain an event and a purchase, and a message
        // becomes optional (the table is rebuilt, since NOT NULL cannot be dropped).
        12,
        "CREATE TABLE callback_deliveries_v12 (
             seq             INTEGER PRIMARY KEY,
             id              TEXT    NOT NULL UNIQUE,
             agent_id        TEXT    NOT NULL REFERENCES agents (id),
             message_id      TEXT    REFERENCES messages (id),
             url             TEXT    NOT NULL,
             status          TEXT    NOT NULL CHECK (status IN ('pending', 'delivered', 'dead')),
             attempts        INTEGER NOT NULL DEFAULT 0,
             next_attempt_at TEXT,
             last_error      TEXT,
             created_at      TEXT    NOT NULL,
             updated_at      TEXT    NOT NULL,
             event           TEXT    NOT NULL DEFAULT 'agent.message'
                                     CHECK (event IN ('agent.message', 'purchase.approval_decided')),
             purchase_id     TEXT    REFERENCES purchases (id),
             CHECK ((event = 'agent.message') = (message_id IS NOT NULL)),
             CHECK ((event = 'purchase.approval_decided') = (purchase_id IS NOT NULL))
         ) STRICT;
         INSERT INTO callback_deliveries_v12 (seq, id, agent_id, message_id, url, status, attempts,
             next_attempt_at, last_error, created_at, updated_at)
         SELECT seq, id, agent_id, message_id, url, status, attempts, next_attempt_at, last_error,
             created_at, updated_at
         FROM callback_deliveries ORDER BY seq;
         DROP TABLE callback_deliveries;
         ALTER TABLE callback_deliveries_v12 RENAME TO callback_deliveries;
         CREATE INDEX callback_deliveries_due ON callback_deliveries (next_attempt_at) WHERE status = 'pending';
         CREATE INDEX callback_deliveries_agent ON callback_deliveries (agent_id, status, seq);",
    ),
    (
        // Open checkouts found by their expiry: expiring the due ones (on every purchase and by
        // the commerce worker) scanned every open checkout, so a purchase slowed as checkouts
        // were left unpaid.
        13,
        "CREATE INDEX purchases_pending_expiry ON purchases (expires_at) WHERE status = 'pending_payment';",
    ),
];
