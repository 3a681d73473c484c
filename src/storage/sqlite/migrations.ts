// SQLite schema, one entry per version (PRAGMA user_version). Never edit a shipped entry: add one.
// Times are epoch milliseconds (INTEGER); ids never reused (AUTOINCREMENT), so a URL, an ETag or
// an idempotent replay can never point at a different record later.

export const SQLITE_MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE categories (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    name        TEXT    NOT NULL,
    description TEXT,
    version     INTEGER NOT NULL DEFAULT 1
  );

  -- The pet row carries its inventory entry (stock): placing an order checks and updates one row.
  CREATE TABLE pets (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    name        TEXT    NOT NULL,
    search_name TEXT    NOT NULL, -- name lower-cased by the app, for the case-insensitive filter
    category_id INTEGER NOT NULL REFERENCES categories (id),
    status      TEXT    NOT NULL CHECK (status IN ('available', 'pending', 'sold')),
    stock       INTEGER NOT NULL DEFAULT 1 CHECK (stock >= 0),
    version     INTEGER NOT NULL DEFAULT 1
  );
  CREATE INDEX pets_by_category ON pets (category_id, id);
  CREATE INDEX pets_by_status ON pets (status, id);

  CREATE TABLE api_keys (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    name       TEXT,
    role       TEXT    NOT NULL CHECK (role IN ('customer', 'staff', 'admin')),
    plan       TEXT    NOT NULL CHECK (plan IN ('free', 'pro', 'business', 'enterprise')),
    per_minute INTEGER,
    per_day    INTEGER,
    key_hash   TEXT    NOT NULL UNIQUE, -- SHA-256 of the key; the key itself is never stored
    key_prefix TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER,
    version    INTEGER NOT NULL DEFAULT 1
  );

  -- No foreign key on pet_id: a pet whose orders are all complete may be deleted, and its
  -- orders keep the id as history.
  CREATE TABLE orders (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    pet_id       INTEGER NOT NULL,
    owner_key_id INTEGER REFERENCES api_keys (id),
    quantity     INTEGER NOT NULL CHECK (quantity > 0),
    ship_date    INTEGER,
    complete     INTEGER NOT NULL DEFAULT 0 CHECK (complete IN (0, 1)),
    created_at   INTEGER NOT NULL,
    version      INTEGER NOT NULL DEFAULT 1
  );
  CREATE INDEX orders_by_pet ON orders (pet_id, complete);
  CREATE INDEX orders_by_owner ON orders (owner_key_id, id);

  CREATE TABLE idempotency_keys (
    scope       TEXT    NOT NULL,
    key         TEXT    NOT NULL,
    fingerprint TEXT    NOT NULL,
    response    TEXT    NOT NULL, -- the first result, as JSON
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (scope, key)
  );
  CREATE INDEX idempotency_by_age ON idempotency_keys (created_at);

  CREATE TABLE bans (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    key_id     INTEGER REFERENCES api_keys (id),
    subject    TEXT    NOT NULL,
    started_at INTEGER NOT NULL,
    ends_at    INTEGER NOT NULL,
    reason     TEXT    NOT NULL,
    lifted_at  INTEGER
  );
  CREATE INDEX bans_by_key ON bans (key_id, ends_at);
  CREATE INDEX bans_by_lift ON bans (lifted_at);
  `,
  // Key lifecycle: expiry, rotation (a rotated key shares the quota identity of the key it
  // replaces: quota_key_id is the first key of its rotation chain, NULL meaning the key itself)
  // and usage per key and UTC day, written in batches by access/usage.ts, never per request.
  `
  ALTER TABLE api_keys ADD COLUMN expires_at INTEGER;
  ALTER TABLE api_keys ADD COLUMN replaces INTEGER REFERENCES api_keys (id);
  ALTER TABLE api_keys ADD COLUMN replaced_by INTEGER REFERENCES api_keys (id);
  ALTER TABLE api_keys ADD COLUMN quota_key_id INTEGER REFERENCES api_keys (id);
  ALTER TABLE api_keys ADD COLUMN last_used_at INTEGER;
  CREATE INDEX api_keys_by_quota_key ON api_keys (quota_key_id);

  CREATE TABLE key_usage (
    key_id  INTEGER NOT NULL REFERENCES api_keys (id),
    day     TEXT    NOT NULL, -- UTC day, YYYY-MM-DD
    allowed INTEGER NOT NULL DEFAULT 0,
    limited INTEGER NOT NULL DEFAULT 0,
    banned  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (key_id, day)
  );
  `,
  // Rule 10 (orders expire) and rule 9 (caps per customer). An open order holds its stock until
  // expires_at; NULL once complete. The open orders of older versions get one default hold (30
  // minutes) from the upgrade. The partial indexes cover only open orders: the lazy sweep of one
  // pet, the caps of one owner, and the periodic sweep by age.
  `
  ALTER TABLE orders ADD COLUMN expires_at INTEGER;
  UPDATE orders SET expires_at = CAST(unixepoch('subsec') * 1000 AS INTEGER) + 1800000 WHERE complete = 0;
  CREATE INDEX orders_open_by_pet ON orders (pet_id, expires_at) WHERE complete = 0;
  CREATE INDEX orders_open_by_owner ON orders (owner_key_id, expires_at) WHERE complete = 0;
  CREATE INDEX orders_open_by_expiry ON orders (expires_at) WHERE complete = 0;
  `,
  // The operator console (docs/product.md section 10): calls of deprecated operations per
  // operation, key and UTC day, added in the usage flush (access/usage.ts), never per request.
  `
  CREATE TABLE deprecated_calls (
    operation    TEXT    NOT NULL, -- the operationId
    key_id       INTEGER NOT NULL REFERENCES api_keys (id),
    day          TEXT    NOT NULL, -- UTC day, YYYY-MM-DD
    calls        INTEGER NOT NULL DEFAULT 0,
    last_call_at INTEGER NOT NULL,
    PRIMARY KEY (operation, key_id, day)
  );
  CREATE INDEX deprecated_calls_by_day ON deprecated_calls (day);
  `,
  // Events (docs/product.md, events): the outbox. Each change appends its events in its own
  // transaction (storage/sqlite/events.ts); the feed reads them in seq order, which on SQLite is
  // also commit order (one writer). data is the record as stored, rendered when read.
  // event_cursors: where a background reader of the feed (the webhook fan-out) has got to.
  `
  CREATE TABLE events (
    seq            INTEGER PRIMARY KEY AUTOINCREMENT,
    tx             TEXT    NOT NULL DEFAULT '0', -- always '0': PostgreSQL's writing transaction (same columns)
    id             TEXT    NOT NULL UNIQUE,
    type           TEXT    NOT NULL,
    created_at     INTEGER NOT NULL,
    audience       TEXT    NOT NULL CHECK (audience IN ('order', 'catalog', 'inventory', 'key', 'webhook')),
    subject_key_id INTEGER,
    data           TEXT    NOT NULL
  );
  CREATE INDEX events_by_age ON events (created_at);
  CREATE INDEX events_by_subject ON events (subject_key_id, seq);

  CREATE TABLE event_cursors (
    name TEXT    PRIMARY KEY,
    tx   TEXT    NOT NULL DEFAULT '0',
    seq  INTEGER NOT NULL DEFAULT 0
  );
  `,
  // Rule 11 (issue 30): after cancelling an order or letting it lapse, its owner may not hold the
  // same pet again until \`until\`. Written with the cancel or the sweep, read by the placement;
  // the periodic sweep forgets the ended ones (by \`until\`).
  `
  CREATE TABLE order_cooldowns (
    owner_key_id INTEGER NOT NULL REFERENCES api_keys (id),
    pet_id       INTEGER NOT NULL,
    until        INTEGER NOT NULL,
    PRIMARY KEY (owner_key_id, pet_id)
  );
  CREATE INDEX order_cooldowns_by_until ON order_cooldowns (until);
  `,
  // Webhooks (docs/product.md, webhooks): the endpoints, one delivery per endpoint and event (a
  // replay or a test adds another), and every attempt for GET /webhooks/{id}/deliveries. A
  // delivery goes with its event when events are pruned (ON DELETE CASCADE), and its attempts with it.
  `
  CREATE TABLE webhooks (
    seq                   INTEGER PRIMARY KEY AUTOINCREMENT,
    id                    TEXT    NOT NULL UNIQUE,
    owner_key_id          INTEGER NOT NULL REFERENCES api_keys (id),
    url                   TEXT    NOT NULL,
    types                 TEXT    NOT NULL, -- JSON array of type names and family.* patterns
    description           TEXT,
    status                TEXT    NOT NULL CHECK (status IN ('enabled', 'disabled')),
    secret                TEXT    NOT NULL,
    previous_secret       TEXT,
    previous_secret_until INTEGER,
    created_at            INTEGER NOT NULL,
    updated_at            INTEGER NOT NULL,
    failing_since         INTEGER,
    version               INTEGER NOT NULL DEFAULT 1
  );
  CREATE INDEX webhooks_by_owner ON webhooks (owner_key_id, seq);

  CREATE TABLE webhook_deliveries (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    webhook_id      TEXT    NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id        TEXT    NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    origin          TEXT    NOT NULL CHECK (origin IN ('feed', 'replay', 'test')),
    status          TEXT    NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER,
    lease_owner     TEXT,
    lease_until     INTEGER,
    last_status     INTEGER,
    last_error      TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
  );
  CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries (webhook_id, event_id) WHERE origin = 'feed';
  CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
  CREATE INDEX webhook_deliveries_by_event ON webhook_deliveries (event_id);

  CREATE TABLE webhook_attempts (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id INTEGER NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    webhook_id  TEXT    NOT NULL,
    attempt     INTEGER NOT NULL,
    at          INTEGER NOT NULL,
    outcome     TEXT    NOT NULL CHECK (outcome IN ('succeeded', 'failed')),
    status      INTEGER,
    error       TEXT,
    duration_ms INTEGER NOT NULL
  );
  CREATE INDEX webhook_attempts_by_webhook ON webhook_attempts (webhook_id, id);
  CREATE INDEX webhook_attempts_by_delivery ON webhook_attempts (delivery_id);

  INSERT OR IGNORE INTO event_cursors (name) VALUES ('webhooks');
  `,
  // The key search (issue 30 item 7): the name folded by the app (storage/key-filters.ts,
  // searchFold), written with the name, so no engine's lower() decides what matches. The keys
  // already there are filled here: the connection's lower() is that very fold (database.ts).
  `
  ALTER TABLE api_keys ADD COLUMN search_name TEXT NOT NULL DEFAULT '';
  UPDATE api_keys SET search_name = lower(name) WHERE name IS NOT NULL;
  `,
  // Restricted keys (issue 33): a key's scopes, the canonical comma list of accounts/scopes.ts;
  // NULL for a key that may do all its role allows (every key made before).
  `
  ALTER TABLE api_keys ADD COLUMN scopes TEXT;
  `,
  // Key notices (issue 31): which notice (`7d`, `1d`) each key has had, so the key-expiring job
  // sends each once (jobs/key-expiring.ts); the index serves its search of keys near expiry.
  `
  CREATE TABLE key_notices (
    key_id  INTEGER NOT NULL REFERENCES api_keys (id),
    notice  TEXT    NOT NULL,
    sent_at INTEGER NOT NULL,
    PRIMARY KEY (key_id, notice)
  );
  CREATE INDEX api_keys_by_expiry ON api_keys (expires_at) WHERE expires_at IS NOT NULL;
  `,
  // The audit log (issue 32): one row per change by staff, an admin, the command line or the
  // system, appended in the change's transaction (audit.ts). `id` is the entry's place in the
  // chain, taken from audit_head (never AUTOINCREMENT: the chain has no gap), and audit_head is
  // the one row every append updates, so appends are serialized and the count and last hash
  // are read in one place (GET /v1/admin/audit/head).
  `
  CREATE TABLE audit_log (
    id           INTEGER PRIMARY KEY,
    at           INTEGER NOT NULL,
    actor_type   TEXT    NOT NULL,
    actor_key_id INTEGER,
    actor_role   TEXT,
    actor_user   TEXT,
    action       TEXT    NOT NULL,
    target_type  TEXT    NOT NULL,
    target_id    TEXT    NOT NULL,
    request_id   TEXT,
    address      TEXT,
    changes      TEXT    NOT NULL,
    hash         TEXT    NOT NULL
  );
  CREATE INDEX audit_log_by_target ON audit_log (target_type, target_id, id);
  CREATE INDEX audit_log_by_actor ON audit_log (actor_type, actor_key_id, id);
  CREATE INDEX audit_log_by_action ON audit_log (action, id);
  CREATE INDEX audit_log_by_at ON audit_log (at);
  CREATE TABLE audit_head (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    count INTEGER NOT NULL,
    hash  TEXT    NOT NULL
  );
  INSERT INTO audit_head (id, count, hash) VALUES (1, 0, '');
  `,
  // Ban events (issue 31): a ban's level (its strike, ratelimit/limiter.ts decision 6), which
  // key.banned and key.unbanned carry; NULL for the bans recorded before. By subject and start:
  // recording a ban again (a retry after a lost answer) finds the first record.
  `
  ALTER TABLE bans ADD COLUMN strike INTEGER;
  CREATE INDEX bans_by_subject ON bans (subject, started_at);
  `,
  // Usage events (issue 31, events/usage-events.ts): what the usage flush announced per quota
  // identity (the first key of a rotation chain) and UTC day, so that quota.threshold and
  // deprecation.used are written once, whatever the instances and restarts. kind 'quota': level
  // is the highest threshold written (0, 80, 95, 100), operation ''; kind 'deprecation': level 1
  // once deprecation.used was written for the operation.
  `
  CREATE TABLE usage_notices (
    key_id    INTEGER NOT NULL REFERENCES api_keys (id),
    day       TEXT    NOT NULL, -- UTC day, YYYY-MM-DD
    kind      TEXT    NOT NULL CHECK (kind IN ('quota', 'deprecation')),
    operation TEXT    NOT NULL DEFAULT '',
    level     INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (key_id, day, kind, operation)
  );
  `,
  // Calls through MCP per key and day (issue 33): of the day's counted requests, those an agent
  // made through the MCP endpoint (shared/channel.ts), added by the usage flush like the others.
  `
  ALTER TABLE key_usage ADD COLUMN mcp INTEGER NOT NULL DEFAULT 0;
  `,
  // The webhook claim (docs/performance-history.md, "Webhooks: the claim"): each endpoint's pending
  // deliveries in claim order, so a claim reads at most each endpoint's room (storage/sqlite/
  // webhooks.ts, claimDue), not every pending delivery. Read backwards it gives the pending part
  // of GET /v1/webhooks/{id}/deliveries (latest due first) without sorting the endpoint's backlog,
  // and it serves the pending count of /metrics: nothing reads webhook_deliveries_due any more.
  `
  CREATE INDEX webhook_deliveries_claim ON webhook_deliveries (webhook_id, next_attempt_at, id) WHERE status = 'pending';
  DROP INDEX webhook_deliveries_due;
  `,
  // Usage retention (jobs/usage-prune.ts): key_usage's rows by day, so the job finds the days past
  // the longest usage view (90 days) without reading every key's rows; deprecated_calls has its
  // own (deprecated_calls_by_day).
  `
  CREATE INDEX key_usage_by_day ON key_usage (day);
  `,
  // Webhooks that settle and are fair (issues 48 and 49): why an endpoint is disabled (`failing`,
  // `manual`, `owner_inactive`; NULL while enabled, and for those disabled before this version),
  // the event type a test delivery sends in place of its webhook.test event (NULL: the event's
  // own), and the deliveries each key holder's replays and recoveries queued per UTC hour (the
  // rate of docs/product.md 13.9; rows of past hours are removed by the next replay).
  `
  ALTER TABLE webhooks ADD COLUMN disabled_reason TEXT;
  ALTER TABLE webhook_deliveries ADD COLUMN test_type TEXT;
  CREATE TABLE webhook_replays (
    owner_key_id INTEGER NOT NULL REFERENCES api_keys (id),
    hour         INTEGER NOT NULL, -- epoch ms of the hour's start
    queued       INTEGER NOT NULL,
    PRIMARY KEY (owner_key_id, hour)
  );
  `,
  // What each delivery attempt sent and what the endpoint answered (issue 50; docs/product.md
  // 13.9, 13.11): per attempt its kind (NULL before this version: read from the delivery), the URL
  // and headers sent, the answer's headers, the first 4 KiB of its body as text and whether it was
  // cut; the body sent once per delivery (every attempt of a delivery sends the same bytes). A
  // replay that makes a waiting retry due marks it (`replay_due`), so that attempt is a replay.
  // The details go after ATTEMPT_DETAILS_KEPT_DAYS (jobs/attempt-prune.ts), a delivery's body with
  // its last attempt's: the partial index finds what is left to prune without reading every attempt.
  `
  ALTER TABLE webhook_attempts ADD COLUMN kind TEXT CHECK (kind IN ('first', 'retry', 'replay'));
  ALTER TABLE webhook_attempts ADD COLUMN request_url TEXT;
  ALTER TABLE webhook_attempts ADD COLUMN request_headers TEXT;
  ALTER TABLE webhook_attempts ADD COLUMN response_headers TEXT;
  ALTER TABLE webhook_attempts ADD COLUMN response_body TEXT;
  ALTER TABLE webhook_attempts ADD COLUMN response_truncated INTEGER;
  ALTER TABLE webhook_deliveries ADD COLUMN request_body TEXT;
  ALTER TABLE webhook_deliveries ADD COLUMN replay_due INTEGER NOT NULL DEFAULT 0;
  CREATE INDEX webhook_attempts_details ON webhook_attempts (at) WHERE request_headers IS NOT NULL;
  `,
  // The key's own request log (key-requests/, issue 50): every request made with a key, written by
  // the recorder's flush in one statement per batch, bounded per key by the prune job (its newest
  // 1,000, and its refusals of 7 days, at most 10,000). AUTOINCREMENT: an id is never reused, so a
  // cursor never names a newer request than the one it was made from. Its pages and prune walk
  // key_requests_by_key; the prune finds the keys with stale refusals by key_requests_refusals.
  `
  CREATE TABLE key_requests (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    key_id       INTEGER NOT NULL,
    at           INTEGER NOT NULL, -- epoch ms
    method       TEXT    NOT NULL,
    route        TEXT    NOT NULL,
    operation_id TEXT,
    query        TEXT,
    status       INTEGER NOT NULL,
    code         TEXT,
    request_id   TEXT    NOT NULL,
    latency_ms   REAL    NOT NULL,
    via          TEXT,
    refusal      TEXT -- JSON: the rule and its facts (key-requests.schema.ts RefusalSchema)
  );
  CREATE INDEX key_requests_by_key ON key_requests (key_id, id);
  CREATE INDEX key_requests_refusals ON key_requests (at) WHERE refusal IS NOT NULL;
  `,
  // The partner portal (issue 50, docs/product.md "Partner portal"): one-time links and sessions,
  // by the SHA-256 of their token (never the token, never the key); and the audit actor's mark of a
  // change made through the portal (`via`, NULL for any other).
  `
  CREATE TABLE portal_links (
    hash       TEXT PRIMARY KEY,
    key_id     INTEGER NOT NULL REFERENCES api_keys (id),
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    used_at    INTEGER
  );
  CREATE INDEX portal_links_by_expiry ON portal_links (expires_at);
  CREATE TABLE portal_sessions (
    hash         TEXT PRIMARY KEY,
    key_id       INTEGER NOT NULL REFERENCES api_keys (id),
    created_at   INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL
  );
  CREATE INDEX portal_sessions_by_expiry ON portal_sessions (expires_at);
  CREATE INDEX portal_sessions_by_last_seen ON portal_sessions (last_seen_at);
  ALTER TABLE audit_log ADD COLUMN actor_via TEXT;
  `,
  // Usage by outcome for the partner portal's chart (docs/product.md 9.11): of `allowed`, the
  // requests answered 4xx other than 429 (access/usage.ts); and a key's own calls of deprecated
  // operations read by key, without scanning every key's rows of the period.
  `
  ALTER TABLE key_usage ADD COLUMN other_4xx INTEGER NOT NULL DEFAULT 0;
  CREATE INDEX deprecated_calls_by_key ON deprecated_calls (key_id, day);
  `
]
