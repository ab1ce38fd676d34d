-- bourse schema, the newest version (`store::SCHEMA_VERSION`). Applied once to a new database;
-- an older file is brought to the same shape by the numbered steps in src/store/mod.rs, which
-- bump PRAGMA user_version. PRAGMAs are set per connection in code.

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
    key_rotated_at TEXT,
    -- The platform's own seller (reference samples); never listed as an agent.
    is_house       INTEGER NOT NULL DEFAULT 0,
    -- Public seller code `S-` + 6 digits, assigned with the first listing.
    seller_code    TEXT    UNIQUE,
    -- Seller reputation inputs and the derived score (see service::reputation).
    rating_sum     INTEGER NOT NULL DEFAULT 0,
    rating_count   INTEGER NOT NULL DEFAULT 0,
    sales_count    INTEGER NOT NULL DEFAULT 0,
    reputation     REAL    NOT NULL DEFAULT 2.4,
    -- v4. The UTS #39 confusable skeleton of display_name: no two agents share one.
    display_skeleton TEXT
) STRICT;

CREATE INDEX agents_display_name ON agents (display_name) WHERE display_name IS NOT NULL;
CREATE INDEX agents_display_skeleton ON agents (display_skeleton) WHERE display_skeleton IS NOT NULL;

-- Operator settings and instance facts (chair binding, provenance, instance creation time).
-- `value` is JSON.
CREATE TABLE settings (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_at TEXT NOT NULL
) STRICT;

-- Taxonomy, seeded idempotently from assets/taxonomy.json at every start.
CREATE TABLE categories (
    slug        TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    icon        TEXT NOT NULL,
    class       TEXT NOT NULL,
    description TEXT NOT NULL,
    position    INTEGER NOT NULL
) STRICT;

CREATE TABLE verticals (
    slug        TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    icon        TEXT NOT NULL,
    category    TEXT NOT NULL REFERENCES categories (slug),
    is_external INTEGER NOT NULL,
    position    INTEGER NOT NULL
) STRICT;

-- A seller's verified delivery endpoint. Only verified endpoints are stored, and a URL
-- belongs to one seller.
CREATE TABLE delivery_endpoints (
    agent_id    TEXT PRIMARY KEY REFERENCES agents (id),
    url         TEXT NOT NULL UNIQUE,
    verified_at TEXT NOT NULL,
    updated_at  TEXT NOT NULL
) STRICT;

-- Listings: metadata and a small preview only; the deliverable stays with the seller.
-- seller_code, seller_reputation and category are denormalized for browse without joins.
CREATE TABLE listings (
    seq                INTEGER PRIMARY KEY,
    id                 TEXT    NOT NULL UNIQUE,
    seller_id          TEXT    NOT NULL REFERENCES agents (id),
    seller_code        TEXT    NOT NULL,
    seller_reputation  REAL    NOT NULL,
    vertical_slug      TEXT    NOT NULL REFERENCES verticals (slug),
    category           TEXT    NOT NULL REFERENCES categories (slug),
    title              TEXT    NOT NULL,
    description        TEXT    NOT NULL,
    price_cents        INTEGER NOT NULL CHECK (price_cents >= 0),
    listing_type       TEXT    NOT NULL CHECK (listing_type IN ('standard', 'limited', 'exclusive')),
    max_copies         INTEGER,
    sold_count         INTEGER NOT NULL DEFAULT 0,
    purchase_count     INTEGER NOT NULL DEFAULT 0,
    view_count         INTEGER NOT NULL DEFAULT 0,
    active             INTEGER NOT NULL,
    exclusive_sold     INTEGER NOT NULL DEFAULT 0,
    fingerprint        TEXT    NOT NULL,
    preview            TEXT    NOT NULL,
    images             TEXT    NOT NULL,
    metadata           TEXT    NOT NULL,
    is_sample          INTEGER NOT NULL DEFAULT 0,
    physical           INTEGER NOT NULL DEFAULT 0,
    deliverable_ref    TEXT,
    health_consent     INTEGER NOT NULL DEFAULT 0,
    deidentification   TEXT,
    authorized_uses    TEXT,
    rating_sum         INTEGER NOT NULL DEFAULT 0,
    rating_count       INTEGER NOT NULL DEFAULT 0,
    quality            REAL    NOT NULL,
    created_at         TEXT    NOT NULL,
    version            INTEGER NOT NULL DEFAULT 1,
    last_modified      TEXT,
    modification_count INTEGER NOT NULL DEFAULT 0,
    -- Listed when its vertical had no commerce: its first settled sale may claim founding fill.
    founding_eligible  INTEGER NOT NULL DEFAULT 0,
    -- Catalogue change counter: set by the triggers below to one more than the highest, on
    -- every insert and update, so a follower reading a replica finds what moved since it last
    -- looked (`changed > ?`) and keeps its browse index current without reloading it.
    changed            INTEGER NOT NULL DEFAULT 0
) STRICT;

-- Browse filters and sorts run in memory (service::browse); SQLite serves rows by seq, the
-- seller's own listings, and full-text search.
CREATE INDEX listings_seller ON listings (seller_id, seq);
CREATE INDEX listings_samples ON listings (vertical_slug) WHERE is_sample = 1;
CREATE INDEX listings_changed ON listings (changed);

-- The trigger's own UPDATE changes `changed` only, which the WHEN clause lets through.
CREATE TRIGGER listings_changed_insert AFTER INSERT ON listings BEGIN
    UPDATE listings SET changed = (SELECT max(changed) FROM listings) + 1 WHERE seq = new.seq;
END;

CREATE TRIGGER listings_changed_update AFTER UPDATE ON listings WHEN new.changed = old.changed
BEGIN
    UPDATE listings SET changed = (SELECT max(changed) FROM listings) + 1 WHERE seq = new.seq;
END;

-- Full-text search over title and description (external content: no second copy of the text).
CREATE VIRTUAL TABLE listings_fts USING fts5 (
    title, description,
    content = 'listings', content_rowid = 'seq',
    tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TRIGGER listings_fts_insert AFTER INSERT ON listings BEGIN
    INSERT INTO listings_fts (rowid, title, description) VALUES (new.seq, new.title, new.description);
END;

CREATE TRIGGER listings_fts_update AFTER UPDATE OF title, description ON listings BEGIN
    INSERT INTO listings_fts (listings_fts, rowid, title, description)
        VALUES ('delete', old.seq, old.title, old.description);
    INSERT INTO listings_fts (rowid, title, description) VALUES (new.seq, new.title, new.description);
END;

CREATE TRIGGER listings_fts_delete AFTER DELETE ON listings BEGIN
    INSERT INTO listings_fts (listings_fts, rowid, title, description)
        VALUES ('delete', old.seq, old.title, old.description);
END;

-- Signed modification history: each entry stored verbatim so it verifies byte for byte.
CREATE TABLE listing_history (
    listing_id TEXT    NOT NULL REFERENCES listings (id),
    version    INTEGER NOT NULL,
    entry      TEXT    NOT NULL,
    PRIMARY KEY (listing_id, version)
) STRICT, WITHOUT ROWID;

-- Batched counters (flushed from memory; never written per request).
CREATE TABLE counters (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) STRICT;

-- Distinct browsers of the catalogue: a salted hash of the client, never the address itself.
CREATE TABLE queriers (
    key        TEXT PRIMARY KEY,
    first_seen TEXT NOT NULL
) STRICT, WITHOUT ROWID;

-- The inbox: one row per accepted message, with its body. `sequence` is per recipient, from 1.
-- A sender's clientMessageId is unique across all its messages (idempotency key). `id` is
-- time-ordered (UUIDv7), so it and `seq` grow at the right edge; the two per-agent indexes are
-- keyed by the agents' `seq` (an integer) rather than their 36-character ids: every message
-- lands on one leaf of each wherever its agents are, and small entries keep those leaves few
-- and their splits rare.
CREATE TABLE messages (
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
    -- agents.seq of recipient_id and sender_id.
    recipient_seq     INTEGER NOT NULL,
    sender_seq        INTEGER NOT NULL,
    UNIQUE (recipient_seq, sequence),
    UNIQUE (sender_seq, client_message_id)
) STRICT;

-- The journal: append-only record of acceptance. Never the body, only its digest.
CREATE TABLE message_journal (
    seq              INTEGER PRIMARY KEY,
    message_id       TEXT NOT NULL,
    sender_handle    TEXT NOT NULL,
    recipient_handle TEXT NOT NULL,
    accepted_at      TEXT NOT NULL,
    body_digest      TEXT NOT NULL,
    receipt          TEXT NOT NULL
) STRICT;

CREATE TRIGGER message_journal_append_only_update BEFORE UPDATE ON message_journal BEGIN
    SELECT RAISE(ABORT, 'the message journal is append-only');
END;
CREATE TRIGGER message_journal_append_only_delete BEFORE DELETE ON message_journal BEGIN
    SELECT RAISE(ABORT, 'the message journal is append-only');
END;

-- Push deliveries to callback URLs (`agent.message` of a message, `purchase.approval_decided`
-- of a purchase whose approval was decided); survives restarts.
CREATE TABLE callback_deliveries (
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

CREATE INDEX callback_deliveries_due ON callback_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX callback_deliveries_agent ON callback_deliveries (agent_id, status, seq);

-- Purchases. The deliverable is never stored: only its fingerprint at delivery.
CREATE TABLE purchases (
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
    -- Checkout (paid rails): the session that reserves the listing until it expires.
    checkout_session     TEXT    UNIQUE,
    expires_at           TEXT,
    -- Physical orders: the seller's shipment.
    shipped_at           TEXT,
    carrier              TEXT,
    tracking             TEXT,
    -- v2. The rail's own checkout page (Stripe's hosted Checkout), the rail's reference of the
    -- payment (Stripe PaymentIntent, x402 transaction hash) and the paying wallet (x402).
    checkout_url         TEXT,
    payment_ref          TEXT,
    payer                TEXT,
    -- v10. The restricted key that opened it (its own caps count its purchases), and the OAuth
    -- grant whose token bought it (its daily cap counts it).
    key_id               TEXT,
    grant_id             TEXT
) STRICT;

CREATE UNIQUE INDEX purchases_payment_ref ON purchases (payment_ref) WHERE payment_ref IS NOT NULL;

CREATE INDEX purchases_pending ON purchases (listing_id, expires_at) WHERE status = 'pending_payment';
-- v13. Expiring the open checkouts whose time is up (every purchase and the commerce worker do it)
-- reads only those, not every open checkout: with the index above alone it scanned them all.
CREATE INDEX purchases_pending_expiry ON purchases (expires_at) WHERE status = 'pending_payment';

CREATE INDEX purchases_buyer ON purchases (buyer_id, seq);
CREATE INDEX purchases_listing ON purchases (listing_id, status);

-- The sales ledger: one row per sale. Free sales are released rows of amount 0. The buyer label
-- and the party shown by /api/proof/demand are derived when it is read (service::proof).
CREATE TABLE ledger (
    seq                   INTEGER PRIMARY KEY,
    id                    TEXT    NOT NULL UNIQUE,
    purchase_id           TEXT    NOT NULL UNIQUE REFERENCES purchases (id),
    seller_code           TEXT    NOT NULL,
    vertical_slug         TEXT    NOT NULL,
    amount_cents          INTEGER NOT NULL,
    platform_fee_cents    INTEGER NOT NULL,
    rail                  TEXT    NOT NULL CHECK (rail IN ('checkout', 'card', 'wallet')),
    status                TEXT    NOT NULL CHECK (status IN ('held', 'released')),
    is_reference_listing  INTEGER NOT NULL,
    created_at            TEXT    NOT NULL,
    -- When the escrow clock ends (set at the first delivery, and shipment for physical orders).
    release_at            TEXT,
    released_at           TEXT,
    -- v2. The payout at release (Stripe: the transfer id); a failed one is retried with backoff.
    payout_ref            TEXT,
    payout_attempts       INTEGER NOT NULL DEFAULT 0,
    payout_retry_at       TEXT,
    payout_error          TEXT,
    -- v3. The charge the row's transfers are tied to (Stripe `source_transaction`; `none` for
    -- none), chosen before the first transfer request and never changed, so every request
    -- under an idempotency key has the same parameters.
    payout_source         TEXT
) STRICT;

CREATE INDEX ledger_due ON ledger (release_at) WHERE status = 'held';
CREATE INDEX ledger_vertical ON ledger (vertical_slug) WHERE is_reference_listing = 0;

-- Sellers' payout accounts on the payment rail (sandbox: a local onboarding page).
CREATE TABLE payout_accounts (
    agent_id      TEXT PRIMARY KEY REFERENCES agents (id),
    onboarding_id TEXT NOT NULL UNIQUE,
    status        TEXT NOT NULL CHECK (status IN ('pending', 'complete')),
    created_at    TEXT NOT NULL,
    completed_at  TEXT,
    -- v2. The rail the account is on, and its id there (Stripe: acct_…).
    rail          TEXT NOT NULL DEFAULT 'sandbox',
    account_ref   TEXT
) STRICT;

-- v2. Payment-rail events already handled (Stripe delivers some more than once).
CREATE TABLE webhook_events (
    id          TEXT PRIMARY KEY,
    type        TEXT NOT NULL,
    received_at TEXT NOT NULL
) STRICT;

-- v3. Payments that arrived for a checkout which could no longer be sold (it had expired and the
-- listing went to another buyer). Each is given back on its rail, retried with backoff until the
-- rail confirms (`refund_ref`). `attempts` counts clear refusals and names the next
-- idempotency key; an attempt with an unknown outcome is retried under the same key.
CREATE TABLE refunds (
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

-- Ratings by verified buyers, one per purchase, anonymous in public.
CREATE TABLE ratings (
    seq         INTEGER PRIMARY KEY,
    id          TEXT    NOT NULL UNIQUE,
    purchase_id TEXT    NOT NULL UNIQUE REFERENCES purchases (id),
    listing_id  TEXT    NOT NULL REFERENCES listings (id),
    rating      INTEGER NOT NULL CHECK (rating BETWEEN 1 AND 5),
    comment     TEXT,
    created_at  TEXT    NOT NULL,
    attestation TEXT    NOT NULL
) STRICT;

CREATE INDEX ratings_listing ON ratings (listing_id, seq);

-- What agents and people sent the operator: ideas and contact messages. The id is the
-- capability to read the inquiry's thread later.
CREATE TABLE inquiries (
    seq          INTEGER PRIMARY KEY,
    id           TEXT    NOT NULL UNIQUE,
    kind         TEXT    NOT NULL CHECK (kind IN ('idea', 'contact')),
    subject      TEXT    NOT NULL,
    message      TEXT    NOT NULL,
    category     TEXT,
    name         TEXT,
    email        TEXT,
    submitted_by TEXT,
    impact       TEXT,
    agent_id     TEXT    REFERENCES agents (id),
    status       TEXT    NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'answered', 'resolved', 'closed')),
    created_at   TEXT    NOT NULL
) STRICT;

-- The messages of an inquiry's thread (the first is the inquiry itself). Attachments are small
-- base64 blobs stored as JSON.
CREATE TABLE inquiry_messages (
    seq          INTEGER PRIMARY KEY,
    id           TEXT    NOT NULL UNIQUE,
    inquiry_id   TEXT    NOT NULL REFERENCES inquiries (id),
    sender       TEXT    NOT NULL CHECK (sender IN ('team', 'inquirer')),
    author_name  TEXT,
    body         TEXT    NOT NULL,
    attachments  TEXT    NOT NULL DEFAULT '[]',
    email_status TEXT    NOT NULL,
    created_at   TEXT    NOT NULL
) STRICT;

CREATE INDEX inquiry_messages_thread ON inquiry_messages (inquiry_id, seq);

-- Relay rails approved by the operator, rooted in an inquiry; the consent token is stored hashed.
CREATE TABLE rails (
    seq               INTEGER PRIMARY KEY,
    id                TEXT NOT NULL UNIQUE,
    root_inquiry_id   TEXT NOT NULL REFERENCES inquiries (id),
    consent_token_hash TEXT NOT NULL UNIQUE,
    created_at        TEXT NOT NULL
) STRICT;

-- Requests for quoted work (POST /api/services/request); the id works like an inquiry's.
CREATE TABLE service_requests (
    seq         INTEGER PRIMARY KEY,
    id          TEXT NOT NULL UNIQUE,
    request     TEXT NOT NULL,
    created_at  TEXT NOT NULL
) STRICT;

-- The operator's classification of agents into ledger parties (unclassified when absent).
-- `arms_length` is never stored: it is what remains after every exclusion.
CREATE TABLE parties (
    agent_id      TEXT PRIMARY KEY REFERENCES agents (id),
    party         TEXT NOT NULL CHECK (party IN ('unclassified', 'internal', 'house_buyer', 'house_seller', 'affiliated')),
    classified_at TEXT NOT NULL
) STRICT;

-- Announced fee schedules (the live one is version 1 in service::fees).
CREATE TABLE fee_announcements (
    seq            INTEGER PRIMARY KEY,
    version        INTEGER NOT NULL UNIQUE,
    announced_at   TEXT    NOT NULL,
    effective_from TEXT    NOT NULL,
    schedule       TEXT    NOT NULL,
    note           TEXT
) STRICT;

-- Admission-door decisions. One row per (public key, idempotency key); `answer` is the signed
-- answer exactly as first sent, replayed byte for byte. Refusals are kept too, so a replay of
-- a refused request gets the same refusal.
CREATE TABLE ingress_decisions (
    public_key      TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    request_digest  TEXT NOT NULL,
    decision        TEXT NOT NULL CHECK (decision IN ('ADMIT', 'REFUSE')),
    reason          TEXT NOT NULL,
    class           TEXT,
    admission_id    TEXT,
    answer          TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    PRIMARY KEY (public_key, idempotency_key)
) STRICT;
CREATE INDEX ingress_admissions ON ingress_decisions (public_key, class) WHERE decision = 'ADMIT';

-- The signed consent record of each personal-health-data listing (service::health), stored
-- with the listing in one transaction.
CREATE TABLE health_consents (
    listing_id  TEXT PRIMARY KEY REFERENCES listings (id),
    seller_id   TEXT NOT NULL REFERENCES agents (id),
    record      TEXT NOT NULL,
    created_at  TEXT NOT NULL
) STRICT;

-- v5. OAuth 2.1 for hosted MCP clients (service::identity::oauth). Codes, tokens and client
-- secrets carry 256 random bits and are stored only as SHA-256 hashes.
-- A client: registered here (RFC 7591, `client_id` = `bmc_…`) or known by its metadata document
-- (`client_id` = the document's https URL, fetched and cached).
CREATE TABLE oauth_clients (
    client_id     TEXT PRIMARY KEY,
    kind          TEXT NOT NULL CHECK (kind IN ('registered', 'metadata')),
    name          TEXT NOT NULL,
    client_uri    TEXT,
    -- JSON array of the exact redirect URIs.
    redirect_uris TEXT NOT NULL,
    auth_method   TEXT NOT NULL CHECK (auth_method IN ('none', 'client_secret_post', 'client_secret_basic')),
    secret_hash   TEXT,
    created_at    TEXT NOT NULL,
    -- Metadata documents: when the document was last fetched.
    fetched_at    TEXT,
    revoked_at    TEXT
) STRICT;

-- One person's Allow: an agent lets a client act for it with these scopes at this resource.
-- Codes and tokens hang off it; revoking it ends them all.
CREATE TABLE oauth_grants (
    id         TEXT PRIMARY KEY,
    client_id  TEXT NOT NULL REFERENCES oauth_clients (client_id),
    agent_id   TEXT NOT NULL REFERENCES agents (id),
    scopes     TEXT NOT NULL,
    resource   TEXT NOT NULL,
    created_at TEXT NOT NULL,
    used_at    TEXT,
    revoked_at TEXT,
    revoked_by TEXT,
    -- v10. The daily spending cap (US cents, UTC day) the person chose for a grant with `spend`.
    spend_daily_cents INTEGER
) STRICT;
CREATE INDEX oauth_grants_agent ON oauth_grants (agent_id);
CREATE INDEX oauth_grants_client ON oauth_grants (client_id);

-- Authorization codes: single use, short-lived, bound to the redirect URI and PKCE challenge.
CREATE TABLE oauth_codes (
    code_hash    TEXT PRIMARY KEY,
    grant_id     TEXT NOT NULL REFERENCES oauth_grants (id),
    redirect_uri TEXT NOT NULL,
    -- Whether the authorization request named it (then the token request must repeat it).
    redirect_given INTEGER NOT NULL,
    challenge    TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    used_at      TEXT
) STRICT;
CREATE INDEX oauth_codes_grant ON oauth_codes (grant_id);
CREATE INDEX oauth_codes_expiry ON oauth_codes (expires_at);

-- Access and refresh tokens. A refresh token is exchanged once (`used_at`); a second use revokes
-- its grant.
CREATE TABLE oauth_tokens (
    token_hash TEXT PRIMARY KEY,
    grant_id   TEXT NOT NULL REFERENCES oauth_grants (id),
    kind       TEXT NOT NULL CHECK (kind IN ('access', 'refresh')),
    -- The scopes it carries (a refresh may narrow them).
    scopes     TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    used_at    TEXT,
    revoked_at TEXT
) STRICT;
CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id);
CREATE INDEX oauth_tokens_expiry ON oauth_tokens (expires_at);

-- v7. Orders: purchases asked for as A2A tasks. The order exists before its purchase (an x402
-- purchase is made only when the payment comes); its purchase, once made, has the order's id.
CREATE TABLE orders (
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
CREATE INDEX orders_context ON orders (buyer_id, context_id, seq);

-- v9. The transparency log (c2sp.org/tlog-tiles): one entry per artifact bourse signs, appended
-- in the writer's transaction that creates the artifact (store::tlog::append). `ref` names the
-- artifact ('message:<id>', 'listing:<id>:<version>', …) so its answer can name its index.
CREATE TABLE tlog_entries (
    idx   INTEGER PRIMARY KEY,
    ref   TEXT    NOT NULL UNIQUE,
    entry BLOB    NOT NULL
) STRICT;

-- Every complete subtree's hash, numbered as Go's tlog.StoredHashIndex numbers them (about two
-- per entry); tiles are read from here.
CREATE TABLE tlog_hashes (
    id   INTEGER PRIMARY KEY,
    hash BLOB    NOT NULL
) STRICT;

-- Every checkpoint published (signed note text), never rewritten: a later one always extends
-- an earlier one, and a restore that lost entries is told so by comparing sizes.
CREATE TABLE tlog_checkpoints (
    size      INTEGER PRIMARY KEY,
    root      BLOB    NOT NULL,
    note      TEXT    NOT NULL,
    signed_at TEXT    NOT NULL
) STRICT;

-- v10. An agent's spending policy, set with its full key and enforced in the writer's
-- transaction that opens a purchase (service::spending). Caps are US cents across every rail;
-- NULL is no cap. The lists are JSON arrays of names (rails as purchases name them, macro-category
-- and vertical slugs); NULL allows any.
CREATE TABLE spending_policies (
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
-- v10. What a buyer spent since the start of a day or month, summed when a purchase opens.
CREATE INDEX purchases_buyer_created ON purchases (buyer_id, created_at);
-- v10. Restricted keys an agent mints for its sub-agents: stored as SHA-256 like every key,
-- with their scopes (space-separated), their own caps (no higher than the agent's), an optional
-- expiry and a label. Rotating the agent's full key leaves them alone.
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
CREATE INDEX agent_keys_agent ON agent_keys (agent_id);
-- v11. Approval by the agent's owner of a purchase above the policy's approval threshold. The
-- purchase waits in `pending_approval` (holding its amount) until the owner decides on the page
-- /approve/{id}; the id is the capability and only its SHA-256 is stored. `decision` is NULL while
-- open, then `approved`, `denied` or `expired` (the commerce worker, past `expires_at`).
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
CREATE INDEX approvals_buyer ON approvals (buyer_id, created_at);
