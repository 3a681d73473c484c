// PostgreSQL schema, one entry per version (tracked in schema_migrations). Never edit a shipped
// entry: add one. The schema mirrors storage/sqlite/migrations.ts column for column: ids are
// `bigint generated always as identity` (never reused, like AUTOINCREMENT), times are epoch
// milliseconds in BIGINT, and the names of tables, columns and indexes are the same. Constraint
// names are spelled out because the engine turns violations into API errors by name (errors.ts).

export const POSTGRES_MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE categories (
    id          bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text    NOT NULL,
    description text,
    version     integer NOT NULL DEFAULT 1
  );

  -- The pet row carries its inventory entry (stock): placing an order checks and updates one row.
  CREATE TABLE pets (
    id          bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text    NOT NULL,
    search_name text    NOT NULL, -- name lower-cased by the app, for the case-insensitive filter
    category_id bigint  NOT NULL CONSTRAINT pets_category_id_fkey REFERENCES categories (id),
    status      text    NOT NULL CONSTRAINT pets_status_check CHECK (status IN ('available', 'pending', 'sold')),
    stock       integer NOT NULL DEFAULT 1 CONSTRAINT pets_stock_check CHECK (stock >= 0),
    version     integer NOT NULL DEFAULT 1
  );
  CREATE INDEX pets_by_category ON pets (category_id, id);
  CREATE INDEX pets_by_status ON pets (status, id);

  CREATE TABLE api_keys (
    id         bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name       text,
    role       text    NOT NULL CHECK (role IN ('customer', 'staff', 'admin')),
    plan       text    NOT NULL CHECK (plan IN ('free', 'pro', 'business', 'enterprise')),
    per_minute bigint,
    per_day    bigint,
    key_hash   text    NOT NULL CONSTRAINT api_keys_key_hash_key UNIQUE, -- SHA-256 of the key; the key itself is never stored
    key_prefix text    NOT NULL,
    created_at bigint  NOT NULL,
    revoked_at bigint,
    version    integer NOT NULL DEFAULT 1
  );

  -- No foreign key on pet_id: a pet whose orders are all complete may be deleted, and its
  -- orders keep the id as history.
  CREATE TABLE orders (
    id           bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    pet_id       bigint  NOT NULL,
    owner_key_id bigint  CONSTRAINT orders_owner_key_id_fkey REFERENCES api_keys (id),
    quantity     integer NOT NULL CONSTRAINT orders_quantity_check CHECK (quantity > 0),
    ship_date    bigint,
    complete     boolean NOT NULL DEFAULT false,
    created_at   bigint  NOT NULL,
    version      integer NOT NULL DEFAULT 1
  );
  CREATE INDEX orders_by_pet ON orders (pet_id, complete);
  CREATE INDEX orders_by_owner ON orders (owner_key_id, id);

  CREATE TABLE idempotency_keys (
    scope       text   NOT NULL,
    key         text   NOT NULL,
    fingerprint text   NOT NULL,
    response    text   NOT NULL, -- the first result, as JSON ('' while the first use is in flight)
    created_at  bigint NOT NULL,
    PRIMARY KEY (scope, key)
  );
  CREATE INDEX idempotency_by_age ON idempotency_keys (created_at);

  CREATE TABLE bans (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key_id     bigint CONSTRAINT bans_key_id_fkey REFERENCES api_keys (id),
    subject    text   NOT NULL,
    started_at bigint NOT NULL,
    ends_at    bigint NOT NULL,
    reason     text   NOT NULL,
    lifted_at  bigint
  );
  CREATE INDEX bans_by_key ON bans (key_id, ends_at);
  CREATE INDEX bans_by_lift ON bans (lifted_at);
  `,
  // Key lifecycle: expiry, rotation (a rotated key shares the quota identity of the key it
  // replaces: quota_key_id is the first key of its rotation chain, NULL meaning the key itself)
  // and usage per key and UTC day, written in batches by keys/usage.ts, never per request.
  `
  ALTER TABLE api_keys ADD COLUMN expires_at bigint;
  ALTER TABLE api_keys ADD COLUMN replaces bigint CONSTRAINT api_keys_replaces_fkey REFERENCES api_keys (id);
  ALTER TABLE api_keys ADD COLUMN replaced_by bigint CONSTRAINT api_keys_replaced_by_fkey REFERENCES api_keys (id);
  ALTER TABLE api_keys ADD COLUMN quota_key_id bigint CONSTRAINT api_keys_quota_key_id_fkey REFERENCES api_keys (id);
  ALTER TABLE api_keys ADD COLUMN last_used_at bigint;
  CREATE INDEX api_keys_by_quota_key ON api_keys (quota_key_id);

  CREATE TABLE key_usage (
    key_id  bigint NOT NULL CONSTRAINT key_usage_key_id_fkey REFERENCES api_keys (id),
    day     text   NOT NULL, -- UTC day, YYYY-MM-DD
    allowed bigint NOT NULL DEFAULT 0,
    limited bigint NOT NULL DEFAULT 0,
    banned  bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (key_id, day)
  );
  `
]
