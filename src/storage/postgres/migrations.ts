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
  // and usage per key and UTC day, written in batches by access/usage.ts, never per request.
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
  `,
  // Rule 10 (orders expire) and rule 9 (caps per customer), as in SQLite's version 3, plus the
  // two functions that make an order one round trip (storage/postgres/orders.ts; the design is
  // in docs/performance.md, "PostgreSQL orders"). An open order holds its stock until
  // expires_at; NULL once complete. The open orders of older versions get one default hold (30
  // minutes) from the upgrade.
  `
  ALTER TABLE orders ADD COLUMN expires_at bigint;
  UPDATE orders SET expires_at = (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 1800000 WHERE NOT complete;
  CREATE INDEX orders_open_by_pet ON orders (pet_id, expires_at) WHERE NOT complete;
  CREATE INDEX orders_open_by_owner ON orders (owner_key_id, expires_at) WHERE NOT complete;
  CREATE INDEX orders_open_by_expiry ON orders (expires_at) WHERE NOT complete;

  -- Rule 10: deletes the pet's open orders expired at p_now and returns their units (rule 5: a
  -- pending pet with stock again is available). Rows another transaction holds (a cancel, another
  -- sweep) are skipped: that one deals with them. Returns how many orders it deleted.
  CREATE FUNCTION sweep_expired_orders (p_pet bigint, p_now bigint) RETURNS integer
  LANGUAGE sql AS $fn$
    WITH gone AS (
      DELETE FROM orders WHERE id IN (
        SELECT id FROM orders WHERE pet_id = p_pet AND NOT complete AND expires_at <= p_now
        ORDER BY id FOR UPDATE SKIP LOCKED)
      RETURNING quantity
    ), back AS (
      UPDATE pets SET stock = stock + g.units,
        status = CASE WHEN status = 'pending' THEN 'available' ELSE status END, version = version + 1
      FROM (SELECT sum(quantity) AS units FROM gone) g
      WHERE id = p_pet AND g.units IS NOT NULL
    )
    SELECT count(*)::integer FROM gone
  $fn$;

  -- One order in one call (rules 2, 3, 9, 10 and the Idempotency-Key claim), so one round trip.
  -- The outcome says what happened: placed (the order's columns follow), replayed (detail: the
  -- first result as JSON), reused (the key came with another request), limit (detail: the
  -- owner's live orders and units of the pet, as JSON), refused (detail: the pet's status and
  -- stock as JSON, or NULL when there is no such pet). A refusal leaves no claim behind: nothing
  -- was created. The order of the locks is the same as the transactions of orders.ts: the
  -- owner's advisory lock (capped callers only), the claim, the pet's expired orders, the pet.
  CREATE FUNCTION place_order (p_pet bigint, p_owner bigint, p_quantity integer, p_ship_date bigint,
    p_now bigint, p_expires_at bigint, p_max_orders integer, p_max_units integer,
    p_scope text, p_key text, p_fingerprint text, p_claim_ttl bigint)
  RETURNS TABLE (outcome text, detail text, id bigint, pet_id bigint, owner_key_id bigint, quantity integer,
    ship_date bigint, complete boolean, created_at bigint, expires_at bigint, version integer)
  LANGUAGE plpgsql AS $fn$
  #variable_conflict use_column
  DECLARE
    claimed boolean := false;
    prior record;
    held record;
    pet record;
    made record;
  BEGIN
    IF p_key IS NOT NULL THEN
      -- A concurrent use of the same key waits on the primary key until the first commits
      -- (then replays it) or rolls back (then claims it). Twice at most: the row we conflicted
      -- with may be purged before we lock it.
      FOR attempt IN 1..2 LOOP
        INSERT INTO idempotency_keys (scope, key, fingerprint, response, created_at)
          VALUES (p_scope, p_key, p_fingerprint, '', p_now) ON CONFLICT (scope, key) DO NOTHING;
        IF FOUND THEN claimed := true; EXIT; END IF;
        SELECT i.fingerprint, i.response, i.created_at INTO prior FROM idempotency_keys i
          WHERE i.scope = p_scope AND i.key = p_key FOR UPDATE;
        CONTINUE WHEN NOT FOUND;
        IF prior.created_at <= p_now - p_claim_ttl THEN
          -- Expired: as if absent; the row is locked, so this call takes it over.
          UPDATE idempotency_keys SET fingerprint = p_fingerprint, response = '', created_at = p_now
            WHERE scope = p_scope AND key = p_key;
          claimed := true; EXIT;
        END IF;
        IF prior.fingerprint <> p_fingerprint THEN outcome := 'reused'; RETURN NEXT; RETURN; END IF;
        outcome := 'replayed'; detail := prior.response; RETURN NEXT; RETURN;
      END LOOP;
      IF NOT claimed THEN RAISE EXCEPTION 'idempotency claim kept vanishing'; END IF;
    END IF;

    IF p_max_orders IS NOT NULL THEN
      -- Rule 9: one customer's capped placements queue on this lock (0x6f726472, "ordr"), so two
      -- at once cannot both pass the count. Uncapped callers never take it.
      PERFORM pg_advisory_xact_lock(1869767794, (p_owner % 2147483647)::integer);
      SELECT count(*)::integer AS orders, coalesce(sum(o.quantity) FILTER (WHERE o.pet_id = p_pet), 0)::integer AS units
        INTO held FROM orders o WHERE o.owner_key_id = p_owner AND NOT o.complete AND o.expires_at > p_now;
      IF held.orders >= p_max_orders OR held.units + p_quantity > p_max_units THEN
        IF claimed THEN DELETE FROM idempotency_keys WHERE scope = p_scope AND key = p_key; END IF;
        outcome := 'limit'; detail := json_build_object('orders', held.orders, 'units', held.units)::text;
        RETURN NEXT; RETURN;
      END IF;
    END IF;

    -- Rule 10: stock held by the pet's expired orders comes back before this order is judged.
    PERFORM sweep_expired_orders(p_pet, p_now);

    -- Rules 2 and 3 in one conditional UPDATE (in SET, stock is the value before it).
    UPDATE pets SET stock = stock - p_quantity,
      status = CASE WHEN stock = p_quantity THEN 'pending' ELSE status END, version = version + 1
      WHERE id = p_pet AND status = 'available' AND stock >= p_quantity;
    IF NOT FOUND THEN
      -- Why not: read under the row lock, so the reason given is the current one.
      SELECT p.status, p.stock INTO pet FROM pets p WHERE p.id = p_pet FOR UPDATE;
      outcome := 'refused';
      IF FOUND THEN detail := json_build_object('status', pet.status, 'stock', pet.stock)::text; END IF;
      IF claimed THEN DELETE FROM idempotency_keys WHERE scope = p_scope AND key = p_key; END IF;
      RETURN NEXT; RETURN;
    END IF;

    INSERT INTO orders (pet_id, owner_key_id, quantity, ship_date, complete, created_at, expires_at)
      VALUES (p_pet, p_owner, p_quantity, p_ship_date, false, p_now, p_expires_at)
      RETURNING orders.id, orders.pet_id, orders.owner_key_id, orders.quantity, orders.ship_date,
        orders.complete, orders.created_at, orders.expires_at, orders.version INTO made;
    IF claimed THEN
      -- The first result, as the store's OrderRecord in JSON (what a replay returns).
      UPDATE idempotency_keys SET response = json_build_object('id', made.id, 'petId', made.pet_id,
        'quantity', made.quantity, 'shipDate', made.ship_date, 'complete', made.complete,
        'ownerKeyId', made.owner_key_id, 'createdAt', made.created_at, 'expiresAt', made.expires_at,
        'version', made.version)::text
        WHERE scope = p_scope AND key = p_key;
    END IF;
    outcome := 'placed'; id := made.id; pet_id := made.pet_id; owner_key_id := made.owner_key_id;
    quantity := made.quantity; ship_date := made.ship_date; complete := made.complete;
    created_at := made.created_at; expires_at := made.expires_at; version := made.version;
    RETURN NEXT;
  END
  $fn$;
  `,
  // sweep_expired_orders in PL/pgSQL: a LANGUAGE sql function with a data-modifying CTE is never
  // inlined, and PostgreSQL before 18 plans it again on every call, once per order placed. PL/pgSQL
  // keeps its plans for the session, and when nothing has expired (the common case) the sweep is
  // one index probe of orders_open_by_pet. Same behaviour as version 3.
  `
  CREATE OR REPLACE FUNCTION sweep_expired_orders (p_pet bigint, p_now bigint) RETURNS integer
  LANGUAGE plpgsql AS $fn$
  DECLARE
    gone integer;
    units bigint;
  BEGIN
    WITH deleted AS (
      DELETE FROM orders WHERE id IN (
        SELECT o.id FROM orders o WHERE o.pet_id = p_pet AND NOT o.complete AND o.expires_at <= p_now
        ORDER BY o.id FOR UPDATE SKIP LOCKED)
      RETURNING quantity
    )
    SELECT count(*)::integer, sum(quantity) INTO gone, units FROM deleted;
    IF gone > 0 THEN
      UPDATE pets SET stock = stock + units,
        status = CASE WHEN status = 'pending' THEN 'available' ELSE status END, version = version + 1
        WHERE id = p_pet;
    END IF;
    RETURN gone;
  END
  $fn$;
  `,
  // The operator console (docs/product.md section 10), as SQLite's version 4 (here version 5): calls of
  // deprecated operations per operation, key and UTC day, added in the usage flush.
  `
  CREATE TABLE deprecated_calls (
    operation    text   NOT NULL,
    key_id       bigint NOT NULL CONSTRAINT deprecated_calls_key_id_fkey REFERENCES api_keys (id),
    day          text   NOT NULL,
    calls        bigint NOT NULL DEFAULT 0,
    last_call_at bigint NOT NULL,
    PRIMARY KEY (operation, key_id, day)
  );
  CREATE INDEX deprecated_calls_by_day ON deprecated_calls (day);
  `,
  // Group commit of orders (storage/postgres/orders.ts, docs/performance.md "PostgreSQL orders"):
  // the orders that arrived while the previous batch was in flight, placed by one call, in one
  // transaction, so one WAL flush for all of them. Each item is decided alone by place_order,
  // which never raises for a refusal (stock, caps, a reused or replayed Idempotency-Key, no such
  // pet): it answers an outcome, so one order's refusal neither fails nor rolls back the others.
  // The answer carries the item's index in p_items. Locks are taken in one order to keep two
  // batches (two instances, or two batches in flight) from waiting on each other in a cycle: rule
  // 9's advisory locks of every capped owner of the batch first, in owner order, then the items
  // in pet order (the pet row is each item's last lock). Items of one pet keep their arrival order.
  `
  CREATE FUNCTION place_orders (p_items jsonb, p_claim_ttl bigint)
  RETURNS TABLE (item integer, outcome text, detail text, id bigint, pet_id bigint, owner_key_id bigint, quantity integer,
    ship_date bigint, complete boolean, created_at bigint, expires_at bigint, version integer)
  LANGUAGE plpgsql AS $fn$
  #variable_conflict use_column
  DECLARE
    capped bigint;
    o record;
  BEGIN
    FOR capped IN SELECT DISTINCT (e->>'owner')::bigint FROM jsonb_array_elements(p_items) e
        WHERE e->>'maxOrders' IS NOT NULL ORDER BY 1 LOOP
      PERFORM pg_advisory_xact_lock(1869767794, (capped % 2147483647)::integer);
    END LOOP;
    FOR o IN SELECT (t.n - 1)::integer AS i, t.e FROM jsonb_array_elements(p_items) WITH ORDINALITY AS t(e, n)
        ORDER BY (t.e->>'pet')::bigint, t.n LOOP
      RETURN QUERY SELECT o.i, r.outcome, r.detail, r.id, r.pet_id, r.owner_key_id, r.quantity, r.ship_date,
        r.complete, r.created_at, r.expires_at, r.version
        FROM place_order((o.e->>'pet')::bigint, (o.e->>'owner')::bigint, (o.e->>'quantity')::integer,
          (o.e->>'shipDate')::bigint, (o.e->>'now')::bigint, (o.e->>'expiresAt')::bigint,
          (o.e->>'maxOrders')::integer, (o.e->>'maxUnits')::integer,
          o.e->>'scope', o.e->>'key', o.e->>'fingerprint', p_claim_ttl) r;
    END LOOP;
  END
  $fn$;
  `,
  // Events, as SQLite's version 5 (here version 7), with one more column: tx, the writing
  // transaction, because PostgreSQL hands out seq in one order and may commit in another. The
  // feed returns only rows of transactions below the oldest one still running, in (tx, seq)
  // order, so a row can never appear behind a reader's cursor (storage/postgres/events.ts).
  `
  CREATE TABLE events (
    seq            bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tx             xid8    NOT NULL DEFAULT pg_current_xact_id(),
    id             text    NOT NULL CONSTRAINT events_id_key UNIQUE,
    type           text    NOT NULL,
    created_at     bigint  NOT NULL,
    audience       text    NOT NULL CONSTRAINT events_audience_check CHECK (audience IN ('order', 'catalog', 'inventory', 'key', 'webhook')),
    subject_key_id bigint,
    data           text    NOT NULL
  );
  CREATE INDEX events_by_position ON events (tx, seq);
  CREATE INDEX events_by_age ON events (created_at);
  CREATE INDEX events_by_subject ON events (subject_key_id, seq);

  CREATE TABLE event_cursors (
    name text   PRIMARY KEY,
    tx   xid8   NOT NULL DEFAULT '0',
    seq  bigint NOT NULL DEFAULT 0
  );
  `,
  // Events of orders and inventory written inside the functions that make the change (docs/product.md,
  // events), and rule 11's cool-downs (issue 30), as SQLite's version 6 (here version 8).
  // order_json is the store's OrderRecord as JSON, once: the Idempotency-Key's first result and
  // the data of every order event. place_order and sweep_expired_orders gain parameters (the
  // threshold of inventory.low, the cool-down), so the old versions are dropped, not replaced;
  // place_orders keeps its signature and reads them from each item.
  `
  CREATE TABLE order_cooldowns (
    owner_key_id bigint NOT NULL CONSTRAINT order_cooldowns_owner_key_id_fkey REFERENCES api_keys (id),
    pet_id       bigint NOT NULL,
    until        bigint NOT NULL,
    PRIMARY KEY (owner_key_id, pet_id)
  );
  CREATE INDEX order_cooldowns_by_until ON order_cooldowns (until);

  CREATE FUNCTION order_json (p_id bigint, p_pet bigint, p_quantity integer, p_ship_date bigint, p_complete boolean,
    p_owner bigint, p_created_at bigint, p_expires_at bigint, p_version integer) RETURNS text
  LANGUAGE sql IMMUTABLE AS $fn$
    SELECT json_build_object('id', p_id, 'petId', p_pet, 'quantity', p_quantity, 'shipDate', p_ship_date,
      'complete', p_complete, 'ownerKeyId', p_owner, 'createdAt', p_created_at, 'expiresAt', p_expires_at,
      'version', p_version)::text
  $fn$;

  DROP FUNCTION place_orders (jsonb, bigint);
  DROP FUNCTION place_order (bigint, bigint, integer, bigint, bigint, bigint, integer, integer, text, text, text, bigint);
  DROP FUNCTION sweep_expired_orders (bigint, bigint);

  -- Rule 10 as in version 4, plus an order.expired event per order deleted and its owner's
  -- cool-down (rule 11; p_cooldown_ms 0: none), from the lapse (expires_at), in the same statement.
  CREATE FUNCTION sweep_expired_orders (p_pet bigint, p_now bigint, p_cooldown_ms bigint) RETURNS integer
  LANGUAGE plpgsql AS $fn$
  DECLARE
    gone integer;
    units bigint;
  BEGIN
    WITH deleted AS (
      DELETE FROM orders WHERE id IN (
        SELECT o.id FROM orders o WHERE o.pet_id = p_pet AND NOT o.complete AND o.expires_at <= p_now
        ORDER BY o.id FOR UPDATE SKIP LOCKED)
      RETURNING *
    ), expired AS (
      INSERT INTO events (id, type, created_at, audience, subject_key_id, data)
        SELECT 'evt_' || replace(gen_random_uuid()::text, '-', ''), 'order.expired', p_now, 'order', d.owner_key_id,
          order_json(d.id, d.pet_id, d.quantity, d.ship_date, d.complete, d.owner_key_id, d.created_at, d.expires_at, d.version)
        FROM deleted d ORDER BY d.id
    ), cooling AS (
      INSERT INTO order_cooldowns (owner_key_id, pet_id, until)
        SELECT d.owner_key_id, p_pet, max(d.expires_at) + p_cooldown_ms FROM deleted d
        WHERE p_cooldown_ms > 0 AND d.owner_key_id IS NOT NULL GROUP BY d.owner_key_id
      ON CONFLICT (owner_key_id, pet_id) DO UPDATE SET until = greatest(order_cooldowns.until, excluded.until)
    )
    SELECT count(*)::integer, sum(quantity) INTO gone, units FROM deleted;
    IF gone > 0 THEN
      UPDATE pets SET stock = stock + units,
        status = CASE WHEN status = 'pending' THEN 'available' ELSE status END, version = version + 1
        WHERE id = p_pet;
    END IF;
    RETURN gone;
  END
  $fn$;

  -- As version 3, plus: rule 11 (p_check_cooldown: a customer cooling down from the pet is refused,
  -- outcome cooldown, detail: the end as epoch ms), checked after the sweep, which may have just
  -- started it; order.created, and inventory.low when the stock falls from above p_low_stock to at
  -- or below it, in this transaction.
  CREATE FUNCTION place_order (p_pet bigint, p_owner bigint, p_quantity integer, p_ship_date bigint,
    p_now bigint, p_expires_at bigint, p_max_orders integer, p_max_units integer,
    p_scope text, p_key text, p_fingerprint text, p_claim_ttl bigint,
    p_low_stock integer, p_cooldown_ms bigint, p_check_cooldown boolean)
  RETURNS TABLE (outcome text, detail text, id bigint, pet_id bigint, owner_key_id bigint, quantity integer,
    ship_date bigint, complete boolean, created_at bigint, expires_at bigint, version integer)
  LANGUAGE plpgsql AS $fn$
  #variable_conflict use_column
  DECLARE
    claimed boolean := false;
    prior record;
    held record;
    pet record;
    taken record;
    made record;
    cooling bigint;
    record_json text;
  BEGIN
    IF p_key IS NOT NULL THEN
      FOR attempt IN 1..2 LOOP
        INSERT INTO idempotency_keys (scope, key, fingerprint, response, created_at)
          VALUES (p_scope, p_key, p_fingerprint, '', p_now) ON CONFLICT (scope, key) DO NOTHING;
        IF FOUND THEN claimed := true; EXIT; END IF;
        SELECT i.fingerprint, i.response, i.created_at INTO prior FROM idempotency_keys i
          WHERE i.scope = p_scope AND i.key = p_key FOR UPDATE;
        CONTINUE WHEN NOT FOUND;
        IF prior.created_at <= p_now - p_claim_ttl THEN
          UPDATE idempotency_keys SET fingerprint = p_fingerprint, response = '', created_at = p_now
            WHERE scope = p_scope AND key = p_key;
          claimed := true; EXIT;
        END IF;
        IF prior.fingerprint <> p_fingerprint THEN outcome := 'reused'; RETURN NEXT; RETURN; END IF;
        outcome := 'replayed'; detail := prior.response; RETURN NEXT; RETURN;
      END LOOP;
      IF NOT claimed THEN RAISE EXCEPTION 'idempotency claim kept vanishing'; END IF;
    END IF;

    IF p_max_orders IS NOT NULL THEN
      PERFORM pg_advisory_xact_lock(1869767794, (p_owner % 2147483647)::integer);
      SELECT count(*)::integer AS orders, coalesce(sum(o.quantity) FILTER (WHERE o.pet_id = p_pet), 0)::integer AS units
        INTO held FROM orders o WHERE o.owner_key_id = p_owner AND NOT o.complete AND o.expires_at > p_now;
      IF held.orders >= p_max_orders OR held.units + p_quantity > p_max_units THEN
        IF claimed THEN DELETE FROM idempotency_keys WHERE scope = p_scope AND key = p_key; END IF;
        outcome := 'limit'; detail := json_build_object('orders', held.orders, 'units', held.units)::text;
        RETURN NEXT; RETURN;
      END IF;
    END IF;

    PERFORM sweep_expired_orders(p_pet, p_now, p_cooldown_ms);

    IF p_check_cooldown THEN
      SELECT c.until INTO cooling FROM order_cooldowns c WHERE c.owner_key_id = p_owner AND c.pet_id = p_pet AND c.until > p_now;
      IF FOUND THEN
        IF claimed THEN DELETE FROM idempotency_keys WHERE scope = p_scope AND key = p_key; END IF;
        outcome := 'cooldown'; detail := cooling::text;
        RETURN NEXT; RETURN;
      END IF;
    END IF;

    UPDATE pets SET stock = stock - p_quantity,
      status = CASE WHEN stock = p_quantity THEN 'pending' ELSE status END, version = version + 1
      WHERE id = p_pet AND status = 'available' AND stock >= p_quantity
      RETURNING pets.stock, pets.status, pets.version INTO taken;
    IF NOT FOUND THEN
      SELECT p.status, p.stock INTO pet FROM pets p WHERE p.id = p_pet FOR UPDATE;
      outcome := 'refused';
      IF FOUND THEN detail := json_build_object('status', pet.status, 'stock', pet.stock)::text; END IF;
      IF claimed THEN DELETE FROM idempotency_keys WHERE scope = p_scope AND key = p_key; END IF;
      RETURN NEXT; RETURN;
    END IF;

    INSERT INTO orders (pet_id, owner_key_id, quantity, ship_date, complete, created_at, expires_at)
      VALUES (p_pet, p_owner, p_quantity, p_ship_date, false, p_now, p_expires_at)
      RETURNING orders.id, orders.pet_id, orders.owner_key_id, orders.quantity, orders.ship_date,
        orders.complete, orders.created_at, orders.expires_at, orders.version INTO made;
    record_json := order_json(made.id, made.pet_id, made.quantity, made.ship_date, made.complete,
      made.owner_key_id, made.created_at, made.expires_at, made.version);
    IF claimed THEN
      UPDATE idempotency_keys SET response = record_json WHERE scope = p_scope AND key = p_key;
    END IF;
    INSERT INTO events (id, type, created_at, audience, subject_key_id, data)
      VALUES ('evt_' || replace(gen_random_uuid()::text, '-', ''), 'order.created', p_now, 'order', p_owner, record_json);
    IF taken.stock <= p_low_stock AND taken.stock + p_quantity > p_low_stock THEN
      INSERT INTO events (id, type, created_at, audience, subject_key_id, data)
        VALUES ('evt_' || replace(gen_random_uuid()::text, '-', ''), 'inventory.low', p_now, 'inventory', NULL,
          json_build_object('petId', p_pet, 'quantity', taken.stock, 'status', taken.status, 'version', taken.version)::text);
    END IF;
    outcome := 'placed'; id := made.id; pet_id := made.pet_id; owner_key_id := made.owner_key_id;
    quantity := made.quantity; ship_date := made.ship_date; complete := made.complete;
    created_at := made.created_at; expires_at := made.expires_at; version := made.version;
    RETURN NEXT;
  END
  $fn$;

  -- As version 6, with each item's lowStock, cooldownMs and checkCooldown.
  CREATE FUNCTION place_orders (p_items jsonb, p_claim_ttl bigint)
  RETURNS TABLE (item integer, outcome text, detail text, id bigint, pet_id bigint, owner_key_id bigint, quantity integer,
    ship_date bigint, complete boolean, created_at bigint, expires_at bigint, version integer)
  LANGUAGE plpgsql AS $fn$
  #variable_conflict use_column
  DECLARE
    capped bigint;
    o record;
  BEGIN
    FOR capped IN SELECT DISTINCT (e->>'owner')::bigint FROM jsonb_array_elements(p_items) e
        WHERE e->>'maxOrders' IS NOT NULL ORDER BY 1 LOOP
      PERFORM pg_advisory_xact_lock(1869767794, (capped % 2147483647)::integer);
    END LOOP;
    FOR o IN SELECT (t.n - 1)::integer AS i, t.e FROM jsonb_array_elements(p_items) WITH ORDINALITY AS t(e, n)
        ORDER BY (t.e->>'pet')::bigint, t.n LOOP
      RETURN QUERY SELECT o.i, r.outcome, r.detail, r.id, r.pet_id, r.owner_key_id, r.quantity, r.ship_date,
        r.complete, r.created_at, r.expires_at, r.version
        FROM place_order((o.e->>'pet')::bigint, (o.e->>'owner')::bigint, (o.e->>'quantity')::integer,
          (o.e->>'shipDate')::bigint, (o.e->>'now')::bigint, (o.e->>'expiresAt')::bigint,
          (o.e->>'maxOrders')::integer, (o.e->>'maxUnits')::integer,
          o.e->>'scope', o.e->>'key', o.e->>'fingerprint', p_claim_ttl,
          (o.e->>'lowStock')::integer, (o.e->>'cooldownMs')::bigint, (o.e->>'checkCooldown')::boolean) r;
    END LOOP;
  END
  $fn$;
  `,
  // Webhooks, as SQLite's webhooks migration: endpoints, deliveries (gone with their event when
  // events are pruned) and attempts.
  `
  CREATE TABLE webhooks (
    seq                   bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id                    text    NOT NULL CONSTRAINT webhooks_id_key UNIQUE,
    owner_key_id          bigint  NOT NULL REFERENCES api_keys (id),
    url                   text    NOT NULL,
    types                 text    NOT NULL,
    description           text,
    status                text    NOT NULL CONSTRAINT webhooks_status_check CHECK (status IN ('enabled', 'disabled')),
    secret                text    NOT NULL,
    previous_secret       text,
    previous_secret_until bigint,
    created_at            bigint  NOT NULL,
    updated_at            bigint  NOT NULL,
    failing_since         bigint,
    version               integer NOT NULL DEFAULT 1
  );
  CREATE INDEX webhooks_by_owner ON webhooks (owner_key_id, seq);

  CREATE TABLE webhook_deliveries (
    id              bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    webhook_id      text    NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id        text    NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    origin          text    NOT NULL CHECK (origin IN ('feed', 'replay', 'test')),
    status          text    NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at bigint,
    lease_owner     text,
    lease_until     bigint,
    last_status     integer,
    last_error      text,
    created_at      bigint  NOT NULL,
    updated_at      bigint  NOT NULL
  );
  CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries (webhook_id, event_id) WHERE origin = 'feed';
  CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
  CREATE INDEX webhook_deliveries_by_event ON webhook_deliveries (event_id);

  CREATE TABLE webhook_attempts (
    id          bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    delivery_id bigint  NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    webhook_id  text    NOT NULL,
    attempt     integer NOT NULL,
    at          bigint  NOT NULL,
    outcome     text    NOT NULL CHECK (outcome IN ('succeeded', 'failed')),
    status      integer,
    error       text,
    duration_ms integer NOT NULL
  );
  CREATE INDEX webhook_attempts_by_webhook ON webhook_attempts (webhook_id, id);
  CREATE INDEX webhook_attempts_by_delivery ON webhook_attempts (delivery_id);

  INSERT INTO event_cursors (name) VALUES ('webhooks') ON CONFLICT (name) DO NOTHING;
  `,
  // The key search (issue 30 item 7), as SQLite's version 8: the name folded by the app
  // (storage/key-filters.ts, searchFold), written with the name, so the database's LC_CTYPE no
  // longer decides what matches. The keys already there are filled with ICU's root-locale
  // lower(), the same Unicode mapping as JavaScript's toLowerCase, and searchFold's two
  // replacements; a server built without ICU falls back on its own lower().
  `
  ALTER TABLE api_keys ADD COLUMN search_name text NOT NULL DEFAULT '';
  DO $$
  BEGIN
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_collation WHERE collname = 'und-x-icu') THEN
      EXECUTE $u$UPDATE api_keys SET search_name = replace(replace(lower(name COLLATE "und-x-icu"), U&'i\\0307', 'i'), 'ς', 'σ') WHERE name IS NOT NULL$u$;
    ELSE
      UPDATE api_keys SET search_name = replace(replace(lower(name), U&'i\\0307', 'i'), 'ς', 'σ') WHERE name IS NOT NULL;
    END IF;
  END $$;
  `,
  // Restricted keys (issue 33), as SQLite's version 9: a key's scopes, the canonical comma list
  // of accounts/scopes.ts; NULL for a key that may do all its role allows (every key made before).
  `
  ALTER TABLE api_keys ADD COLUMN scopes text;
  `,
  // Key notices (issue 31), as on SQLite: which notice (`7d`, `1d`) each key has had.
  // The primary key is what makes a notice once when two instances run the key-expiring job at
  // the same time: the second INSERT waits for the first and then does nothing.
  `
  CREATE TABLE key_notices (
    key_id  bigint NOT NULL CONSTRAINT key_notices_key_id_fkey REFERENCES api_keys (id),
    notice  text   NOT NULL,
    sent_at bigint NOT NULL,
    PRIMARY KEY (key_id, notice)
  );
  CREATE INDEX api_keys_by_expiry ON api_keys (expires_at) WHERE expires_at IS NOT NULL;
  `,
  // The audit log (issue 32), as SQLite's: one row per change by staff, an admin, the command
  // line or the system, appended in the change's transaction (audit.ts). `id` is the entry's
  // place in the chain, taken from audit_head (never a sequence: the chain has no gap), and
  // audit_head is the one row every append locks (FOR UPDATE) and updates, so appends are
  // serialized across instances and the count and last hash are read in one place.
  `
  CREATE TABLE audit_log (
    id           bigint  PRIMARY KEY,
    at           bigint  NOT NULL,
    actor_type   text    NOT NULL,
    actor_key_id bigint,
    actor_role   text,
    actor_user   text,
    action       text    NOT NULL,
    target_type  text    NOT NULL,
    target_id    text    NOT NULL,
    request_id   text,
    address      text,
    changes      text    NOT NULL,
    hash         text    NOT NULL
  );
  CREATE INDEX audit_log_by_target ON audit_log (target_type, target_id, id);
  CREATE INDEX audit_log_by_actor ON audit_log (actor_type, actor_key_id, id);
  CREATE INDEX audit_log_by_action ON audit_log (action, id);
  CREATE INDEX audit_log_by_at ON audit_log (at);
  CREATE TABLE audit_head (
    id    integer PRIMARY KEY CHECK (id = 1),
    count bigint  NOT NULL,
    hash  text    NOT NULL
  );
  INSERT INTO audit_head (id, count, hash) VALUES (1, 0, '');
  `,
  // Ban events (issue 31), as SQLite's version 12: a ban's level (its strike), which key.banned
  // and key.unbanned carry; NULL for the bans recorded before.
  `
  ALTER TABLE bans ADD COLUMN strike integer;
  CREATE INDEX bans_by_subject ON bans (subject, started_at);
  `,
  // Usage events (issue 31), as SQLite's version 13: what the usage flush announced per quota
  // identity and UTC day (quota.threshold, deprecation.used), so each is written once whatever
  // the instances and restarts; the flush locks these rows before it reads the day's counts.
  `
  CREATE TABLE usage_notices (
    key_id    bigint  NOT NULL CONSTRAINT usage_notices_key_id_fkey REFERENCES api_keys (id),
    day       text    NOT NULL,
    kind      text    NOT NULL CONSTRAINT usage_notices_kind_check CHECK (kind IN ('quota', 'deprecation')),
    operation text    NOT NULL DEFAULT '',
    level     integer NOT NULL DEFAULT 0,
    PRIMARY KEY (key_id, day, kind, operation)
  );
  `,
  // Calls through MCP per key and day (issue 33), as SQLite's version 14: of the day's counted
  // requests, those an agent made through the MCP endpoint.
  `
  ALTER TABLE key_usage ADD COLUMN mcp bigint NOT NULL DEFAULT 0;
  `,
  // The webhook claim, as SQLite's version 15 (here version 17): each endpoint's pending
  // deliveries in claim order, so a claim reads at most each endpoint's room (storage/postgres/
  // webhooks.ts, claimDue); read backwards, the pending part of an endpoint's deliveries list.
  `
  CREATE INDEX webhook_deliveries_claim ON webhook_deliveries (webhook_id, next_attempt_at, id) WHERE status = 'pending';
  DROP INDEX webhook_deliveries_due;
  `,
  // Usage retention, as SQLite's version 16 (here version 18): key_usage's rows by day, for the
  // usage-prune job (jobs/usage-prune.ts).
  `
  CREATE INDEX key_usage_by_day ON key_usage (day);
  `,
  // Time-ordered event ids in PL/pgSQL (issue 49 section 3), as TypeScript makes them
  // (events/events.store.ts, newEventId): `evt_`, the millisecond of the wall clock in 12 hex digits,
  // then 80 random bits in 20. place_order and sweep_expired_orders wrote `evt_` and a random UUID,
  // so their events landed all over the events' unique index instead of at its end. They are
  // replaced with the same bodies as version 8 but for the id (CREATE OR REPLACE: same signatures).
  // The random bits are the 20 hex digits of a version 4 UUID that are random (its version and
  // variant digits left out): gen_random_uuid is in core PostgreSQL, pgcrypto's random bytes are not.
  `
  CREATE FUNCTION new_event_id () RETURNS text
  LANGUAGE sql VOLATILE AS $fn$
    SELECT 'evt_' || lpad(to_hex(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0')
      || substr(u, 1, 12) || substr(u, 14, 3) || substr(u, 18, 5)
    FROM replace(gen_random_uuid()::text, '-', '') AS u
  $fn$;

  CREATE OR REPLACE FUNCTION sweep_expired_orders (p_pet bigint, p_now bigint, p_cooldown_ms bigint) RETURNS integer
  LANGUAGE plpgsql AS $fn$
  DECLARE
    gone integer;
    units bigint;
  BEGIN
    WITH deleted AS (
      DELETE FROM orders WHERE id IN (
        SELECT o.id FROM orders o WHERE o.pet_id = p_pet AND NOT o.complete AND o.expires_at <= p_now
        ORDER BY o.id FOR UPDATE SKIP LOCKED)
      RETURNING *
    ), expired AS (
      INSERT INTO events (id, type, created_at, audience, subject_key_id, data)
        SELECT new_event_id(), 'order.expired', p_now, 'order', d.owner_key_id,
          order_json(d.id, d.pet_id, d.quantity, d.ship_date, d.complete, d.owner_key_id, d.created_at, d.expires_at, d.version)
        FROM deleted d ORDER BY d.id
    ), cooling AS (
      INSERT INTO order_cooldowns (owner_key_id, pet_id, until)
        SELECT d.owner_key_id, p_pet, max(d.expires_at) + p_cooldown_ms FROM deleted d
        WHERE p_cooldown_ms > 0 AND d.owner_key_id IS NOT NULL GROUP BY d.owner_key_id
      ON CONFLICT (owner_key_id, pet_id) DO UPDATE SET until = greatest(order_cooldowns.until, excluded.until)
    )
    SELECT count(*)::integer, sum(quantity) INTO gone, units FROM deleted;
    IF gone > 0 THEN
      UPDATE pets SET stock = stock + units,
        status = CASE WHEN status = 'pending' THEN 'available' ELSE status END, version = version + 1
        WHERE id = p_pet;
    END IF;
    RETURN gone;
  END
  $fn$;

  CREATE OR REPLACE FUNCTION place_order (p_pet bigint, p_owner bigint, p_quantity integer, p_ship_date bigint,
    p_now bigint, p_expires_at bigint, p_max_orders integer, p_max_units integer,
    p_scope text, p_key text, p_fingerprint text, p_claim_ttl bigint,
    p_low_stock integer, p_cooldown_ms bigint, p_check_cooldown boolean)
  RETURNS TABLE (outcome text, detail text, id bigint, pet_id bigint, owner_key_id bigint, quantity integer,
    ship_date bigint, complete boolean, created_at bigint, expires_at bigint, version integer)
  LANGUAGE plpgsql AS $fn$
  #variable_conflict use_column
  DECLARE
    claimed boolean := false;
    prior record;
    held record;
    pet record;
    taken record;
    made record;
    cooling bigint;
    record_json text;
  BEGIN
    IF p_key IS NOT NULL THEN
      FOR attempt IN 1..2 LOOP
        INSERT INTO idempotency_keys (scope, key, fingerprint, response, created_at)
          VALUES (p_scope, p_key, p_fingerprint, '', p_now) ON CONFLICT (scope, key) DO NOTHING;
        IF FOUND THEN claimed := true; EXIT; END IF;
        SELECT i.fingerprint, i.response, i.created_at INTO prior FROM idempotency_keys i
          WHERE i.scope = p_scope AND i.key = p_key FOR UPDATE;
        CONTINUE WHEN NOT FOUND;
        IF prior.created_at <= p_now - p_claim_ttl THEN
          UPDATE idempotency_keys SET fingerprint = p_fingerprint, response = '', created_at = p_now
            WHERE scope = p_scope AND key = p_key;
          claimed := true; EXIT;
        END IF;
        IF prior.fingerprint <> p_fingerprint THEN outcome := 'reused'; RETURN NEXT; RETURN; END IF;
        outcome := 'replayed'; detail := prior.response; RETURN NEXT; RETURN;
      END LOOP;
      IF NOT claimed THEN RAISE EXCEPTION 'idempotency claim kept vanishing'; END IF;
    END IF;

    IF p_max_orders IS NOT NULL THEN
      PERFORM pg_advisory_xact_lock(1869767794, (p_owner % 2147483647)::integer);
      SELECT count(*)::integer AS orders, coalesce(sum(o.quantity) FILTER (WHERE o.pet_id = p_pet), 0)::integer AS units
        INTO held FROM orders o WHERE o.owner_key_id = p_owner AND NOT o.complete AND o.expires_at > p_now;
      IF held.orders >= p_max_orders OR held.units + p_quantity > p_max_units THEN
        IF claimed THEN DELETE FROM idempotency_keys WHERE scope = p_scope AND key = p_key; END IF;
        outcome := 'limit'; detail := json_build_object('orders', held.orders, 'units', held.units)::text;
        RETURN NEXT; RETURN;
      END IF;
    END IF;

    PERFORM sweep_expired_orders(p_pet, p_now, p_cooldown_ms);

    IF p_check_cooldown THEN
      SELECT c.until INTO cooling FROM order_cooldowns c WHERE c.owner_key_id = p_owner AND c.pet_id = p_pet AND c.until > p_now;
      IF FOUND THEN
        IF claimed THEN DELETE FROM idempotency_keys WHERE scope = p_scope AND key = p_key; END IF;
        outcome := 'cooldown'; detail := cooling::text;
        RETURN NEXT; RETURN;
      END IF;
    END IF;

    UPDATE pets SET stock = stock - p_quantity,
      status = CASE WHEN stock = p_quantity THEN 'pending' ELSE status END, version = version + 1
      WHERE id = p_pet AND status = 'available' AND stock >= p_quantity
      RETURNING pets.stock, pets.status, pets.version INTO taken;
    IF NOT FOUND THEN
      SELECT p.status, p.stock INTO pet FROM pets p WHERE p.id = p_pet FOR UPDATE;
      outcome := 'refused';
      IF FOUND THEN detail := json_build_object('status', pet.status, 'stock', pet.stock)::text; END IF;
      IF claimed THEN DELETE FROM idempotency_keys WHERE scope = p_scope AND key = p_key; END IF;
      RETURN NEXT; RETURN;
    END IF;

    INSERT INTO orders (pet_id, owner_key_id, quantity, ship_date, complete, created_at, expires_at)
      VALUES (p_pet, p_owner, p_quantity, p_ship_date, false, p_now, p_expires_at)
      RETURNING orders.id, orders.pet_id, orders.owner_key_id, orders.quantity, orders.ship_date,
        orders.complete, orders.created_at, orders.expires_at, orders.version INTO made;
    record_json := order_json(made.id, made.pet_id, made.quantity, made.ship_date, made.complete,
      made.owner_key_id, made.created_at, made.expires_at, made.version);
    IF claimed THEN
      UPDATE idempotency_keys SET response = record_json WHERE scope = p_scope AND key = p_key;
    END IF;
    INSERT INTO events (id, type, created_at, audience, subject_key_id, data)
      VALUES (new_event_id(), 'order.created', p_now, 'order', p_owner, record_json);
    IF taken.stock <= p_low_stock AND taken.stock + p_quantity > p_low_stock THEN
      INSERT INTO events (id, type, created_at, audience, subject_key_id, data)
        VALUES (new_event_id(), 'inventory.low', p_now, 'inventory', NULL,
          json_build_object('petId', p_pet, 'quantity', taken.stock, 'status', taken.status, 'version', taken.version)::text);
    END IF;
    outcome := 'placed'; id := made.id; pet_id := made.pet_id; owner_key_id := made.owner_key_id;
    quantity := made.quantity; ship_date := made.ship_date; complete := made.complete;
    created_at := made.created_at; expires_at := made.expires_at; version := made.version;
    RETURN NEXT;
  END
  $fn$;
  `,
  // Webhooks that settle and are fair, as SQLite's version 17 (here version 20): why an endpoint
  // is disabled, the type a test delivery sends, and the deliveries each key holder's replays
  // queued per hour.
  `
  ALTER TABLE webhooks ADD COLUMN disabled_reason text;
  ALTER TABLE webhook_deliveries ADD COLUMN test_type text;
  CREATE TABLE webhook_replays (
    owner_key_id bigint  NOT NULL REFERENCES api_keys (id),
    hour         bigint  NOT NULL,
    queued       integer NOT NULL,
    PRIMARY KEY (owner_key_id, hour)
  );
  `,
  // What each delivery attempt sent and what the endpoint answered, as SQLite's "attempt bodies"
  // version (see there).
  `
  ALTER TABLE webhook_attempts ADD COLUMN kind text CHECK (kind IN ('first', 'retry', 'replay'));
  ALTER TABLE webhook_attempts ADD COLUMN request_url text;
  ALTER TABLE webhook_attempts ADD COLUMN request_headers text;
  ALTER TABLE webhook_attempts ADD COLUMN response_headers text;
  ALTER TABLE webhook_attempts ADD COLUMN response_body text;
  ALTER TABLE webhook_attempts ADD COLUMN response_truncated boolean;
  ALTER TABLE webhook_deliveries ADD COLUMN request_body text;
  ALTER TABLE webhook_deliveries ADD COLUMN replay_due boolean NOT NULL DEFAULT false;
  CREATE INDEX webhook_attempts_details ON webhook_attempts (at) WHERE request_headers IS NOT NULL;
  `,
  // The key's own request log, as SQLite's (key-requests/, issue 50).
  `
  CREATE TABLE key_requests (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key_id       bigint           NOT NULL,
    at           bigint           NOT NULL,
    method       text             NOT NULL,
    route        text             NOT NULL,
    operation_id text,
    query        text,
    status       integer          NOT NULL,
    code         text,
    request_id   text             NOT NULL,
    latency_ms   double precision NOT NULL,
    via          text,
    refusal      text
  );
  CREATE INDEX key_requests_by_key ON key_requests (key_id, id);
  CREATE INDEX key_requests_refusals ON key_requests (at) WHERE refusal IS NOT NULL;
  `,
  // The partner portal, as SQLite's: one-time links and sessions by the hash of their token, and
  // the audit actor's mark of a change made through the portal.
  `
  CREATE TABLE portal_links (
    hash       text    PRIMARY KEY,
    key_id     bigint  NOT NULL REFERENCES api_keys (id),
    created_at bigint  NOT NULL,
    expires_at bigint  NOT NULL,
    used_at    bigint
  );
  CREATE INDEX portal_links_by_expiry ON portal_links (expires_at);
  CREATE TABLE portal_sessions (
    hash         text   PRIMARY KEY,
    key_id       bigint NOT NULL REFERENCES api_keys (id),
    created_at   bigint NOT NULL,
    last_seen_at bigint NOT NULL,
    expires_at   bigint NOT NULL
  );
  CREATE INDEX portal_sessions_by_expiry ON portal_sessions (expires_at);
  CREATE INDEX portal_sessions_by_last_seen ON portal_sessions (last_seen_at);
  ALTER TABLE audit_log ADD COLUMN actor_via text;
  `,
  // Usage by outcome for the partner portal's chart, as SQLite's: of `allowed`, the requests
  // answered 4xx other than 429; and a key's own calls of deprecated operations read by key.
  `
  ALTER TABLE key_usage ADD COLUMN other_4xx bigint NOT NULL DEFAULT 0;
  CREATE INDEX deprecated_calls_by_key ON deprecated_calls (key_id, day);
  `,
  // A round's attempt records in one statement (issue 51 item 2; storage/postgres/webhooks.ts,
  // recordAttempt): the dispatcher's records that arrive while one batch is in flight are written
  // by one call, in their order, each as one record alone was (its attempt row while the delivery
  // exists, the delivery's state while this instance holds its lease, a success settling the
  // event's other waiting deliveries to the endpoint and clearing failing_since, a failure setting
  // it); a failure returns its item's failing_since and the endpoint's status, from which
  // TypeScript decides the disable, written apart and durably with its event. The transaction's
  // commit does not wait for the WAL flush (SET LOCAL synchronous_commit = off, which lasts to the
  // transaction's end since the function has no SET clause of its own): a record lost with a
  // crash leaves the delivery leased, the lease expires and the delivery is sent again, which
  // Standard Webhooks receivers dedupe by webhook-id. Called alone, never inside a transaction
  // that writes anything else.
  `
  CREATE FUNCTION record_webhook_attempts (p_items jsonb)
  RETURNS TABLE (item integer, since bigint, endpoint_status text)
  LANGUAGE plpgsql AS $fn$
  DECLARE
    r record;
  BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    FOR r IN SELECT (t.n - 1)::integer AS i, a.*
        FROM jsonb_array_elements(p_items) WITH ORDINALITY AS t(e, n)
        CROSS JOIN LATERAL jsonb_to_record(t.e) AS a(delivery_id bigint, webhook_id text, lease_owner text, attempt integer,
          kind text, at bigint, outcome text, status integer, error text, duration_ms integer, request_url text,
          request_headers text, response_headers text, response_body text, response_truncated boolean,
          request_body text, delivery_status text, next_attempt_at bigint)
        ORDER BY t.n LOOP
      -- Not when the delivery is gone (its endpoint deleted while the attempt was in flight).
      INSERT INTO webhook_attempts (delivery_id, webhook_id, attempt, kind, at, outcome, status, error, duration_ms,
          request_url, request_headers, response_headers, response_body, response_truncated)
        SELECT r.delivery_id, r.webhook_id, r.attempt, r.kind, r.at, r.outcome, r.status, r.error, r.duration_ms,
          r.request_url, r.request_headers, r.response_headers, r.response_body, r.response_truncated
        WHERE EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.id = r.delivery_id);
      UPDATE webhook_deliveries d SET attempts = r.attempt, status = r.delivery_status, next_attempt_at = r.next_attempt_at,
          lease_owner = NULL, lease_until = NULL, last_status = r.status, last_error = r.error, updated_at = r.at,
          replay_due = false, request_body = coalesce(d.request_body, r.request_body)
        WHERE d.id = r.delivery_id AND d.lease_owner = r.lease_owner;
      IF r.outcome = 'succeeded' THEN
        -- The event's other deliveries to the endpoint that wait (a retry beside a replay): the
        -- receiver has it, so none is sent again. One leased by an attempt in flight loses its
        -- lease, so that attempt's record leaves it settled.
        UPDATE webhook_deliveries d SET status = 'succeeded', next_attempt_at = NULL, lease_owner = NULL, lease_until = NULL,
            updated_at = r.at
          WHERE d.event_id = (SELECT s.event_id FROM webhook_deliveries s WHERE s.id = r.delivery_id)
            AND d.webhook_id = r.webhook_id AND d.status = 'pending' AND d.id <> r.delivery_id;
        UPDATE webhooks w SET failing_since = NULL WHERE w.id = r.webhook_id AND w.failing_since IS NOT NULL;
      ELSE
        UPDATE webhooks w SET failing_since = coalesce(w.failing_since, r.at) WHERE w.id = r.webhook_id
          RETURNING r.i, w.failing_since, w.status INTO item, since, endpoint_status;
        IF FOUND THEN RETURN NEXT; END IF;
      END IF;
    END LOOP;
  END
  $fn$;
  `,
  // record_webhook_attempts again, its settling of a success read by the event (webhook_deliveries_by_event,
  // a handful of rows): the endpoint's id and the status compared as expressions (`|| ''`), which
  // neither webhook_deliveries_claim nor its partial predicate serves, as SQLite's
  // SETTLE_OTHERS_SQL does with `+webhook_id`. The plan auto_explain showed
  // during a backlog walked the endpoint's pending deliveries on webhook_deliveries_claim
  // (statistics from before the backlog said one row): 3 to 7 ms a success, and the drain of
  // 65,000 deliveries fell to 170 a second (docs/performance.md).
  `
  CREATE OR REPLACE FUNCTION record_webhook_attempts (p_items jsonb)
  RETURNS TABLE (item integer, since bigint, endpoint_status text)
  LANGUAGE plpgsql AS $fn$
  DECLARE
    r record;
  BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    FOR r IN SELECT (t.n - 1)::integer AS i, a.*
        FROM jsonb_array_elements(p_items) WITH ORDINALITY AS t(e, n)
        CROSS JOIN LATERAL jsonb_to_record(t.e) AS a(delivery_id bigint, webhook_id text, lease_owner text, attempt integer,
          kind text, at bigint, outcome text, status integer, error text, duration_ms integer, request_url text,
          request_headers text, response_headers text, response_body text, response_truncated boolean,
          request_body text, delivery_status text, next_attempt_at bigint)
        ORDER BY t.n LOOP
      -- Not when the delivery is gone (its endpoint deleted while the attempt was in flight).
      INSERT INTO webhook_attempts (delivery_id, webhook_id, attempt, kind, at, outcome, status, error, duration_ms,
          request_url, request_headers, response_headers, response_body, response_truncated)
        SELECT r.delivery_id, r.webhook_id, r.attempt, r.kind, r.at, r.outcome, r.status, r.error, r.duration_ms,
          r.request_url, r.request_headers, r.response_headers, r.response_body, r.response_truncated
        WHERE EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.id = r.delivery_id);
      UPDATE webhook_deliveries d SET attempts = r.attempt, status = r.delivery_status, next_attempt_at = r.next_attempt_at,
          lease_owner = NULL, lease_until = NULL, last_status = r.status, last_error = r.error, updated_at = r.at,
          replay_due = false, request_body = coalesce(d.request_body, r.request_body)
        WHERE d.id = r.delivery_id AND d.lease_owner = r.lease_owner;
      IF r.outcome = 'succeeded' THEN
        -- The event's other deliveries to the endpoint that wait (a retry beside a replay): the
        -- receiver has it, so none is sent again. One leased by an attempt in flight loses its
        -- lease, so that attempt's record leaves it settled.
        UPDATE webhook_deliveries d SET status = 'succeeded', next_attempt_at = NULL, lease_owner = NULL, lease_until = NULL,
            updated_at = r.at
          WHERE d.event_id = (SELECT s.event_id FROM webhook_deliveries s WHERE s.id = r.delivery_id)
            AND d.webhook_id || '' = r.webhook_id AND d.status || '' = 'pending' AND d.id <> r.delivery_id;
        UPDATE webhooks w SET failing_since = NULL WHERE w.id = r.webhook_id AND w.failing_since IS NOT NULL;
      ELSE
        UPDATE webhooks w SET failing_since = coalesce(w.failing_since, r.at) WHERE w.id = r.webhook_id
          RETURNING r.i, w.failing_since, w.status INTO item, since, endpoint_status;
        IF FOUND THEN RETURN NEXT; END IF;
      END IF;
    END LOOP;
  END
  $fn$;
  `,
  // An order's two costs that were not its work (issue 51, docs/performance.md "PostgreSQL
  // orders"): new_event_id in SQL was planned again in every statement that called it (a SQL
  // function that cannot be inlined keeps its plan only for the calling statement), 27 to 56 µs
  // an event; in PL/pgSQL its expression's plan is kept for the session. And the sweep ran its
  // three-part statement (50 µs) before every order though a pet's holds rarely lapse: it now
  // first asks the open-orders index whether one has, as SQLite's PetHolds does in memory.
  `
  CREATE OR REPLACE FUNCTION new_event_id () RETURNS text
  LANGUAGE plpgsql VOLATILE AS $fn$
  DECLARE
    u text := replace(gen_random_uuid()::text, '-', '');
  BEGIN
    RETURN 'evt_' || lpad(to_hex(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0')
      || substr(u, 1, 12) || substr(u, 14, 3) || substr(u, 18, 5);
  END
  $fn$;

  CREATE OR REPLACE FUNCTION sweep_expired_orders (p_pet bigint, p_now bigint, p_cooldown_ms bigint) RETURNS integer
  LANGUAGE plpgsql AS $fn$
  DECLARE
    gone integer;
    units bigint;
  BEGIN
    IF NOT EXISTS (SELECT 1 FROM orders o WHERE o.pet_id = p_pet AND NOT o.complete AND o.expires_at <= p_now) THEN
      RETURN 0;
    END IF;
    WITH deleted AS (
      DELETE FROM orders WHERE id IN (
        SELECT o.id FROM orders o WHERE o.pet_id = p_pet AND NOT o.complete AND o.expires_at <= p_now
        ORDER BY o.id FOR UPDATE SKIP LOCKED)
      RETURNING *
    ), expired AS (
      INSERT INTO events (id, type, created_at, audience, subject_key_id, data)
        SELECT new_event_id(), 'order.expired', p_now, 'order', d.owner_key_id,
          order_json(d.id, d.pet_id, d.quantity, d.ship_date, d.complete, d.owner_key_id, d.created_at, d.expires_at, d.version)
        FROM deleted d ORDER BY d.id
    ), cooling AS (
      INSERT INTO order_cooldowns (owner_key_id, pet_id, until)
        SELECT d.owner_key_id, p_pet, max(d.expires_at) + p_cooldown_ms FROM deleted d
        WHERE p_cooldown_ms > 0 AND d.owner_key_id IS NOT NULL GROUP BY d.owner_key_id
      ON CONFLICT (owner_key_id, pet_id) DO UPDATE SET until = greatest(order_cooldowns.until, excluded.until)
    )
    SELECT count(*)::integer, sum(quantity) INTO gone, units FROM deleted;
    IF gone > 0 THEN
      UPDATE pets SET stock = stock + units,
        status = CASE WHEN status = 'pending' THEN 'available' ELSE status END, version = version + 1
        WHERE id = p_pet;
    END IF;
    RETURN gone;
  END
  $fn$;
  `,
  // The webhook claim (storage/postgres/webhooks.ts, CLAIM_SQL) reads the endpoints' due
  // deliveries one endpoint at a time, in claim order, and stops at its limit. The statement it
  // replaces read every endpoint with work due (10 µs each) before its LIMIT, so a refill that
  // claims one delivery cost 1.1 ms with 200 endpoints holding a backlog. The order is the
  // statement's: the owners with the fewest in flight first, then the endpoints in turns from
  // p_turn_from on (creation order), each endpoint's oldest due first. That order went endpoint
  // by endpoint already, and an owner's cap counted its endpoints in the same order, so reading
  // in it and stopping at the limit picks the same rows. Each read takes at most the endpoint's
  // room, its owner's room less what this claim took of it, and what the limit leaves, locked
  // FOR UPDATE SKIP LOCKED (another instance's claim keeps its rows): every row locked is leased.
  // The owner's liveness (a copy of storage/webhook-rows.ts, liveOwnerSql) is asked by the read,
  // two key lookups before the index, so the list of endpoints reads only webhooks. A recursive
  // query doing the same was slower (0.1 ms more for one, 2.6 to 4.7 ms more for 64 from 400
  // endpoints with work due, server side). Its statements keep their generic plans from the first call:
  // left to choose, the server planned the read again at every call (its LIMIT is a variable,
  // which made the generic plan look dearer), and a claim of 64 (16 reads) took 2.1 ms instead
  // of 1.3. Those plans are made at a server's first claims, when the tables may be nearly empty,
  // and kept for the connection's life: made then, the lease's plan read webhook_deliveries and
  // events whole (a seq scan and a hash join) at every claim once they held a backlog, 11-15 ms
  // a claim at 80,000 deliveries, until an ANALYZE (the bench's drain fell from about 1,800 to
  // 250 deliveries a second). So its plans are the indexes' whatever the statistics say: no
  // sequential or bitmap scan, no hash or merge join (each read is a few rows by an index), and
  // no JIT, which the cost those settings add to the list of endpoints (a scan of webhooks,
  // whichever way) would start: 55 ms of compiling at every claim. The commit does not wait for
  // the WAL flush, as before (set_config local to the transaction, which a SET clause of another
  // setting leaves alone): a lease lost with a crash only lets the delivery be claimed again. The
  // rows come in no order: the caller sorts them.
  `
  CREATE FUNCTION claim_webhook_deliveries (p_per_endpoint integer, p_in_flight jsonb, p_now bigint, p_limit integer,
      p_lease_owner text, p_lease_until bigint, p_turn_from bigint, p_per_owner integer, p_owner_in_flight jsonb)
  RETURNS TABLE (delivery_id bigint, attempts integer, test_type text, origin text, replay_due boolean, request_body text,
      webhook_id text, owner_key_id bigint, url text, secret text, previous_secret text, previous_secret_until bigint,
      turn_seq bigint, next_attempt_at bigint, seq bigint, tx text, id text, type text, created_at bigint, audience text,
      subject_key_id bigint, data text)
  LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET enable_bitmapscan = off
    SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off AS $fn$
  DECLARE
    e record;
    picked bigint[] := '{}';
    -- What this claim took of each owner's endpoints, by owner_key_id.
    took jsonb := '{}';
    got bigint[];
    n integer;
  BEGIN
    FOR e IN SELECT l.webhook, l.owner_id, l.room, l.owner_held FROM (
        SELECT w.id AS webhook, w.seq AS turn, w.owner_key_id AS owner_id,
          p_per_endpoint - coalesce((p_in_flight ->> w.id)::integer, 0) AS room,
          coalesce((p_owner_in_flight ->> w.owner_key_id::text)::integer, 0) AS owner_held
        FROM webhooks w WHERE w.status = 'enabled'
      ) l
      WHERE l.room > 0 AND l.owner_held < p_per_owner
      ORDER BY l.owner_held, l.turn < p_turn_from, l.turn LOOP
      n := least(e.room, p_per_owner - e.owner_held - coalesce((took ->> e.owner_id::text)::integer, 0),
        p_limit - cardinality(picked));
      CONTINUE WHEN n <= 0;
      got := ARRAY(SELECT d.id FROM webhook_deliveries d
        WHERE d.webhook_id = e.webhook AND d.status = 'pending' AND d.next_attempt_at <= p_now
          AND (d.lease_until IS NULL OR d.lease_until < p_now)
          AND (EXISTS (SELECT 1 FROM api_keys lk WHERE lk.id = e.owner_id
                AND lk.revoked_at IS NULL AND (lk.expires_at IS NULL OR lk.expires_at > p_now))
            OR EXISTS (SELECT 1 FROM api_keys lq WHERE lq.quota_key_id = e.owner_id
                AND lq.revoked_at IS NULL AND (lq.expires_at IS NULL OR lq.expires_at > p_now)))
        ORDER BY d.next_attempt_at, d.id LIMIT n FOR UPDATE SKIP LOCKED);
      CONTINUE WHEN cardinality(got) = 0;
      picked := picked || got;
      EXIT WHEN cardinality(picked) >= p_limit;
      took := took || jsonb_build_object(e.owner_id::text,
        coalesce((took ->> e.owner_id::text)::integer, 0) + cardinality(got));
    END LOOP;
    IF cardinality(picked) = 0 THEN
      RETURN;
    END IF;
    PERFORM set_config('synchronous_commit', 'off', true);
    RETURN QUERY WITH leased AS (
        UPDATE webhook_deliveries d SET lease_owner = p_lease_owner, lease_until = p_lease_until WHERE d.id = ANY (picked)
        RETURNING d.id, d.attempts, d.test_type, d.origin, d.replay_due, d.request_body, d.webhook_id, d.event_id,
          d.next_attempt_at
      )
      SELECT l.id, l.attempts, l.test_type, l.origin, l.replay_due, l.request_body, w.id, w.owner_key_id, w.url, w.secret,
        w.previous_secret, w.previous_secret_until, w.seq, l.next_attempt_at, ev.seq, ev.tx::text, ev.id, ev.type,
        ev.created_at, ev.audience, ev.subject_key_id, ev.data
      FROM leased l JOIN webhooks w ON w.id = l.webhook_id JOIN events ev ON ev.id = l.event_id;
  END
  $fn$;
  `,
  // Issue 51 item 2: an order's event gets the id the app gives it (events/events.store.ts,
  // newEventId), sent with the order, rather than new_event_id()'s: PL/pgSQL's call and its
  // string work took 15 µs of each order's database time (docs/performance-history.md, "Session
  // 27"). Only the order's own event: the sweep's and a low stock's keep new_event_id(). The
  // fifteen-parameter place_order stays for an instance of the previous version during a rolling
  // upgrade, as a call of this one without an id; so does an item of place_orders without one.
  // And order_json is STABLE, as json_build_object is: declared IMMUTABLE, its body was more
  // volatile than it, so it was never inlined and each order paid a call of it (8-10 µs).
  `
  ALTER FUNCTION order_json (bigint, bigint, integer, bigint, boolean, bigint, bigint, bigint, integer) STABLE;

  CREATE FUNCTION place_order (p_pet bigint, p_owner bigint, p_quantity integer, p_ship_date bigint,
    p_now bigint, p_expires_at bigint, p_max_orders integer, p_max_units integer,
    p_scope text, p_key text, p_fingerprint text, p_claim_ttl bigint,
    p_low_stock integer, p_cooldown_ms bigint, p_check_cooldown boolean, p_event_id text)
  RETURNS TABLE (outcome text, detail text, id bigint, pet_id bigint, owner_key_id bigint, quantity integer,
    ship_date bigint, complete boolean, created_at bigint, expires_at bigint, version integer)
  LANGUAGE plpgsql AS $fn$
  #variable_conflict use_column
  DECLARE
    claimed boolean := false;
    prior record;
    held record;
    pet record;
    taken record;
    made record;
    cooling bigint;
    record_json text;
  BEGIN
    IF p_key IS NOT NULL THEN
      FOR attempt IN 1..2 LOOP
        INSERT INTO idempotency_keys (scope, key, fingerprint, response, created_at)
          VALUES (p_scope, p_key, p_fingerprint, '', p_now) ON CONFLICT (scope, key) DO NOTHING;
        IF FOUND THEN claimed := true; EXIT; END IF;
        SELECT i.fingerprint, i.response, i.created_at INTO prior FROM idempotency_keys i
          WHERE i.scope = p_scope AND i.key = p_key FOR UPDATE;
        CONTINUE WHEN NOT FOUND;
        IF prior.created_at <= p_now - p_claim_ttl THEN
          UPDATE idempotency_keys SET fingerprint = p_fingerprint, response = '', created_at = p_now
            WHERE scope = p_scope AND key = p_key;
          claimed := true; EXIT;
        END IF;
        IF prior.fingerprint <> p_fingerprint THEN outcome := 'reused'; RETURN NEXT; RETURN; END IF;
        outcome := 'replayed'; detail := prior.response; RETURN NEXT; RETURN;
      END LOOP;
      IF NOT claimed THEN RAISE EXCEPTION 'idempotency claim kept vanishing'; END IF;
    END IF;

    IF p_max_orders IS NOT NULL THEN
      PERFORM pg_advisory_xact_lock(1869767794, (p_owner % 2147483647)::integer);
      SELECT count(*)::integer AS orders, coalesce(sum(o.quantity) FILTER (WHERE o.pet_id = p_pet), 0)::integer AS units
        INTO held FROM orders o WHERE o.owner_key_id = p_owner AND NOT o.complete AND o.expires_at > p_now;
      IF held.orders >= p_max_orders OR held.units + p_quantity > p_max_units THEN
        IF claimed THEN DELETE FROM idempotency_keys WHERE scope = p_scope AND key = p_key; END IF;
        outcome := 'limit'; detail := json_build_object('orders', held.orders, 'units', held.units)::text;
        RETURN NEXT; RETURN;
      END IF;
    END IF;

    PERFORM sweep_expired_orders(p_pet, p_now, p_cooldown_ms);

    IF p_check_cooldown THEN
      SELECT c.until INTO cooling FROM order_cooldowns c WHERE c.owner_key_id = p_owner AND c.pet_id = p_pet AND c.until > p_now;
      IF FOUND THEN
        IF claimed THEN DELETE FROM idempotency_keys WHERE scope = p_scope AND key = p_key; END IF;
        outcome := 'cooldown'; detail := cooling::text;
        RETURN NEXT; RETURN;
      END IF;
    END IF;

    UPDATE pets SET stock = stock - p_quantity,
      status = CASE WHEN stock = p_quantity THEN 'pending' ELSE status END, version = version + 1
      WHERE id = p_pet AND status = 'available' AND stock >= p_quantity
      RETURNING pets.stock, pets.status, pets.version INTO taken;
    IF NOT FOUND THEN
      SELECT p.status, p.stock INTO pet FROM pets p WHERE p.id = p_pet FOR UPDATE;
      outcome := 'refused';
      IF FOUND THEN detail := json_build_object('status', pet.status, 'stock', pet.stock)::text; END IF;
      IF claimed THEN DELETE FROM idempotency_keys WHERE scope = p_scope AND key = p_key; END IF;
      RETURN NEXT; RETURN;
    END IF;

    INSERT INTO orders (pet_id, owner_key_id, quantity, ship_date, complete, created_at, expires_at)
      VALUES (p_pet, p_owner, p_quantity, p_ship_date, false, p_now, p_expires_at)
      RETURNING orders.id, orders.pet_id, orders.owner_key_id, orders.quantity, orders.ship_date,
        orders.complete, orders.created_at, orders.expires_at, orders.version INTO made;
    record_json := order_json(made.id, made.pet_id, made.quantity, made.ship_date, made.complete,
      made.owner_key_id, made.created_at, made.expires_at, made.version);
    IF claimed THEN
      UPDATE idempotency_keys SET response = record_json WHERE scope = p_scope AND key = p_key;
    END IF;
    INSERT INTO events (id, type, created_at, audience, subject_key_id, data)
      VALUES (coalesce(p_event_id, new_event_id()), 'order.created', p_now, 'order', p_owner, record_json);
    IF taken.stock <= p_low_stock AND taken.stock + p_quantity > p_low_stock THEN
      INSERT INTO events (id, type, created_at, audience, subject_key_id, data)
        VALUES (new_event_id(), 'inventory.low', p_now, 'inventory', NULL,
          json_build_object('petId', p_pet, 'quantity', taken.stock, 'status', taken.status, 'version', taken.version)::text);
    END IF;
    outcome := 'placed'; id := made.id; pet_id := made.pet_id; owner_key_id := made.owner_key_id;
    quantity := made.quantity; ship_date := made.ship_date; complete := made.complete;
    created_at := made.created_at; expires_at := made.expires_at; version := made.version;
    RETURN NEXT;
  END
  $fn$;

  CREATE OR REPLACE FUNCTION place_order (p_pet bigint, p_owner bigint, p_quantity integer, p_ship_date bigint,
    p_now bigint, p_expires_at bigint, p_max_orders integer, p_max_units integer,
    p_scope text, p_key text, p_fingerprint text, p_claim_ttl bigint,
    p_low_stock integer, p_cooldown_ms bigint, p_check_cooldown boolean)
  RETURNS TABLE (outcome text, detail text, id bigint, pet_id bigint, owner_key_id bigint, quantity integer,
    ship_date bigint, complete boolean, created_at bigint, expires_at bigint, version integer)
  LANGUAGE sql AS $fn$
    SELECT * FROM place_order(p_pet, p_owner, p_quantity, p_ship_date, p_now, p_expires_at, p_max_orders, p_max_units,
      p_scope, p_key, p_fingerprint, p_claim_ttl, p_low_stock, p_cooldown_ms, p_check_cooldown, NULL::text)
  $fn$;

  CREATE OR REPLACE FUNCTION place_orders (p_items jsonb, p_claim_ttl bigint)
  RETURNS TABLE (item integer, outcome text, detail text, id bigint, pet_id bigint, owner_key_id bigint, quantity integer,
    ship_date bigint, complete boolean, created_at bigint, expires_at bigint, version integer)
  LANGUAGE plpgsql AS $fn$
  #variable_conflict use_column
  DECLARE
    capped bigint;
    o record;
  BEGIN
    FOR capped IN SELECT DISTINCT (e->>'owner')::bigint FROM jsonb_array_elements(p_items) e
        WHERE e->>'maxOrders' IS NOT NULL ORDER BY 1 LOOP
      PERFORM pg_advisory_xact_lock(1869767794, (capped % 2147483647)::integer);
    END LOOP;
    FOR o IN SELECT (t.n - 1)::integer AS i, t.e FROM jsonb_array_elements(p_items) WITH ORDINALITY AS t(e, n)
        ORDER BY (t.e->>'pet')::bigint, t.n LOOP
      RETURN QUERY SELECT o.i, r.outcome, r.detail, r.id, r.pet_id, r.owner_key_id, r.quantity, r.ship_date,
        r.complete, r.created_at, r.expires_at, r.version
        FROM place_order((o.e->>'pet')::bigint, (o.e->>'owner')::bigint, (o.e->>'quantity')::integer,
          (o.e->>'shipDate')::bigint, (o.e->>'now')::bigint, (o.e->>'expiresAt')::bigint,
          (o.e->>'maxOrders')::integer, (o.e->>'maxUnits')::integer,
          o.e->>'scope', o.e->>'key', o.e->>'fingerprint', p_claim_ttl,
          (o.e->>'lowStock')::integer, (o.e->>'cooldownMs')::bigint, (o.e->>'checkCooldown')::boolean,
          o.e->>'eventId') r;
    END LOOP;
  END
  $fn$;
  `,
  // A refill's claim (the one after each attempt that ends) reads each endpoint's due deliveries
  // from past the last one this instance claimed of it, p_after: {webhook id: [next_attempt_at,
  // id]} (storage/postgres/webhooks.ts, claimDue). What lies before is leased by an attempt in
  // flight or settled, and until a vacuum the index still holds an entry for each of those versions:
  // under a backlog a refill read about 200 of them to lock one row (docs/performance.md,
  // "PostgreSQL webhooks"). A claim without p_after (a poll's, a wake's) reads from the start, so a
  // lease that expired behind the cursor, or a replay made due there, waits at most one poll. The
  // nine-parameter claim stays for an instance of the previous version during a rolling upgrade, as
  // a call of this one without a cursor.
  `
  CREATE FUNCTION claim_webhook_deliveries (p_per_endpoint integer, p_in_flight jsonb, p_now bigint, p_limit integer,
      p_lease_owner text, p_lease_until bigint, p_turn_from bigint, p_per_owner integer, p_owner_in_flight jsonb,
      p_after jsonb)
  RETURNS TABLE (delivery_id bigint, attempts integer, test_type text, origin text, replay_due boolean, request_body text,
      webhook_id text, owner_key_id bigint, url text, secret text, previous_secret text, previous_secret_until bigint,
      turn_seq bigint, next_attempt_at bigint, seq bigint, tx text, id text, type text, created_at bigint, audience text,
      subject_key_id bigint, data text)
  LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET enable_bitmapscan = off
    SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off AS $fn$
  DECLARE
    e record;
    picked bigint[] := '{}';
    -- What this claim took of each owner's endpoints, by owner_key_id.
    took jsonb := '{}';
    got bigint[];
    n integer;
  BEGIN
    FOR e IN SELECT l.webhook, l.owner_id, l.room, l.owner_held, l.after_at, l.after_id FROM (
        SELECT w.id AS webhook, w.seq AS turn, w.owner_key_id AS owner_id,
          p_per_endpoint - coalesce((p_in_flight ->> w.id)::integer, 0) AS room,
          coalesce((p_owner_in_flight ->> w.owner_key_id::text)::integer, 0) AS owner_held,
          coalesce((p_after -> w.id ->> 0)::bigint, -9223372036854775808) AS after_at,
          coalesce((p_after -> w.id ->> 1)::bigint, 0) AS after_id
        FROM webhooks w WHERE w.status = 'enabled'
      ) l
      WHERE l.room > 0 AND l.owner_held < p_per_owner
      ORDER BY l.owner_held, l.turn < p_turn_from, l.turn LOOP
      n := least(e.room, p_per_owner - e.owner_held - coalesce((took ->> e.owner_id::text)::integer, 0),
        p_limit - cardinality(picked));
      CONTINUE WHEN n <= 0;
      got := ARRAY(SELECT d.id FROM webhook_deliveries d
        WHERE d.webhook_id = e.webhook AND d.status = 'pending' AND d.next_attempt_at <= p_now
          AND (d.next_attempt_at, d.id) > (e.after_at, e.after_id)
          AND (d.lease_until IS NULL OR d.lease_until < p_now)
          AND (EXISTS (SELECT 1 FROM api_keys lk WHERE lk.id = e.owner_id
                AND lk.revoked_at IS NULL AND (lk.expires_at IS NULL OR lk.expires_at > p_now))
            OR EXISTS (SELECT 1 FROM api_keys lq WHERE lq.quota_key_id = e.owner_id
                AND lq.revoked_at IS NULL AND (lq.expires_at IS NULL OR lq.expires_at > p_now)))
        ORDER BY d.next_attempt_at, d.id LIMIT n FOR UPDATE SKIP LOCKED);
      CONTINUE WHEN cardinality(got) = 0;
      picked := picked || got;
      EXIT WHEN cardinality(picked) >= p_limit;
      took := took || jsonb_build_object(e.owner_id::text,
        coalesce((took ->> e.owner_id::text)::integer, 0) + cardinality(got));
    END LOOP;
    IF cardinality(picked) = 0 THEN
      RETURN;
    END IF;
    PERFORM set_config('synchronous_commit', 'off', true);
    RETURN QUERY WITH leased AS (
        UPDATE webhook_deliveries d SET lease_owner = p_lease_owner, lease_until = p_lease_until WHERE d.id = ANY (picked)
        RETURNING d.id, d.attempts, d.test_type, d.origin, d.replay_due, d.request_body, d.webhook_id, d.event_id,
          d.next_attempt_at
      )
      SELECT l.id, l.attempts, l.test_type, l.origin, l.replay_due, l.request_body, w.id, w.owner_key_id, w.url, w.secret,
        w.previous_secret, w.previous_secret_until, w.seq, l.next_attempt_at, ev.seq, ev.tx::text, ev.id, ev.type,
        ev.created_at, ev.audience, ev.subject_key_id, ev.data
      FROM leased l JOIN webhooks w ON w.id = l.webhook_id JOIN events ev ON ev.id = l.event_id;
  END
  $fn$;

  CREATE OR REPLACE FUNCTION claim_webhook_deliveries (p_per_endpoint integer, p_in_flight jsonb, p_now bigint, p_limit integer,
      p_lease_owner text, p_lease_until bigint, p_turn_from bigint, p_per_owner integer, p_owner_in_flight jsonb)
  RETURNS TABLE (delivery_id bigint, attempts integer, test_type text, origin text, replay_due boolean, request_body text,
      webhook_id text, owner_key_id bigint, url text, secret text, previous_secret text, previous_secret_until bigint,
      turn_seq bigint, next_attempt_at bigint, seq bigint, tx text, id text, type text, created_at bigint, audience text,
      subject_key_id bigint, data text)
  LANGUAGE sql AS $fn$
    SELECT * FROM claim_webhook_deliveries(p_per_endpoint, p_in_flight, p_now, p_limit, p_lease_owner, p_lease_until,
      p_turn_from, p_per_owner, p_owner_in_flight, '{}'::jsonb)
  $fn$;
  `,
  // An attempt's record and the refill's claim after it in one call (storage/postgres/webhooks.ts,
  // recordAttempt with a refill): a delivery cost two round trips, the record's and then the
  // claim's, and on a machine where one costs 170 to 560 µs those were most of a delivery's time
  // (docs/performance.md, "PostgreSQL webhooks"). The record is written first, so the claim sees
  // it (a success's settling of the event's other deliveries to the endpoint). One transaction:
  // a claim that fails rolls the record back, and the attempt is retried as when its record fails.
  // The record's rows have item set; the claim's have item null.
  `
  CREATE FUNCTION record_webhook_attempts_and_claim (p_items jsonb, p_per_endpoint integer, p_in_flight jsonb, p_now bigint,
      p_limit integer, p_lease_owner text, p_lease_until bigint, p_turn_from bigint, p_per_owner integer,
      p_owner_in_flight jsonb, p_after jsonb)
  RETURNS TABLE (item integer, since bigint, endpoint_status text, delivery_id bigint, attempts integer, test_type text,
      origin text, replay_due boolean, request_body text, webhook_id text, owner_key_id bigint, url text, secret text,
      previous_secret text, previous_secret_until bigint, turn_seq bigint, next_attempt_at bigint, seq bigint, tx text,
      id text, type text, created_at bigint, audience text, subject_key_id bigint, data text)
  LANGUAGE plpgsql AS $fn$
  BEGIN
    RETURN QUERY SELECT r.item, r.since, r.endpoint_status, NULL::bigint, NULL::integer, NULL::text, NULL::text,
        NULL::boolean, NULL::text, NULL::text, NULL::bigint, NULL::text, NULL::text, NULL::text, NULL::bigint, NULL::bigint,
        NULL::bigint, NULL::bigint, NULL::text, NULL::text, NULL::text, NULL::bigint, NULL::text, NULL::bigint, NULL::text
      FROM record_webhook_attempts(p_items) r;
    RETURN QUERY SELECT NULL::integer, NULL::bigint, NULL::text, c.*
      FROM claim_webhook_deliveries(p_per_endpoint, p_in_flight, p_now, p_limit, p_lease_owner, p_lease_until,
        p_turn_from, p_per_owner, p_owner_in_flight, p_after) c
      ORDER BY c.next_attempt_at, c.delivery_id;
  END
  $fn$;
  `,
  // A batch of orders decided by runs (issue 51 item 2; storage/postgres/orders.ts): each order
  // cost 110 to 145 µs of database time in a batch, as place_order's statements (the cap's count,
  // the sweep's check, the cool-down's read, the pet's UPDATE, the order's and the event's INSERTs)
  // ran for each. place_order_run takes a run, the orders of one pet in a row of the batch's order,
  // and decides them one after the other in memory, as place_order would: each Idempotency-Key
  // claimed (its statements still one order's), the caps counted once an owner, then the pet swept
  // of lapsed holds (at the first order past its cap, at the run's latest clock), locked and read
  // once, the cool-downs of its owners read once; then one UPDATE of the pet, one INSERT of the
  // orders and one of their events (with inventory.low after the order that crossed the
  // threshold), the keys' answers written and a refusal's claim deleted. A key already in the run
  // starts the next, so that its second order reads the first's answer. Same signature: an
  // instance of the previous version calls it unchanged. 110 → 56 µs an order in batches of 32
  // (docs/performance.md).
  `
  CREATE FUNCTION place_order_run (p_items jsonb, p_idx integer[], p_claim_ttl bigint)
  RETURNS TABLE (item integer, outcome text, detail text, id bigint, pet_id bigint, owner_key_id bigint, quantity integer,
    ship_date bigint, complete boolean, created_at bigint, expires_at bigint, version integer)
  LANGUAGE plpgsql AS $fn$
  #variable_conflict use_column
  DECLARE
    the_pet bigint := (p_items -> p_idx[1] ->> 'pet')::bigint;
    at_now bigint;
    r record;
    prior record;
    claimed boolean;
    found_pet boolean;
    swept boolean := false;
    left_stock integer;
    pet_status text;
    pet_version integer;
    cooling_owners bigint[];
    cooling_until bigint[];
    cap_owners bigint[];
    cap_orders integer[];
    cap_units integer[];
    c integer;
    outcomes text[] := '{}';
    details text[] := '{}';
    placed integer[] := '{}';
    claims integer[] := '{}';
    low_at integer;
    low_json text;
    ids bigint[];
    versions integer[];
  BEGIN
    SELECT max((p_items -> i ->> 'now')::bigint) INTO at_now FROM unnest(p_idx) i;
    -- Each capped owner's holdings by its own index scan (a join planned for a few owners may
    -- read the whole table instead).
    cap_owners := ARRAY(SELECT DISTINCT (p_items -> i ->> 'owner')::bigint FROM unnest(p_idx) i
      WHERE p_items -> i ->> 'maxOrders' IS NOT NULL);
    SELECT array_agg(h.orders ORDER BY w.n), array_agg(h.units ORDER BY w.n) INTO cap_orders, cap_units
      FROM unnest(cap_owners) WITH ORDINALITY AS w(owner, n),
      LATERAL (SELECT count(*)::integer AS orders,
          coalesce(sum(o.quantity) FILTER (WHERE o.pet_id = the_pet), 0)::integer AS units
        FROM orders o WHERE o.owner_key_id = w.owner AND NOT o.complete AND o.expires_at > at_now) h;
    FOR r IN SELECT u.k::integer AS k, t.owner, t.quantity, t.now, t."maxOrders" AS max_orders, t."maxUnits" AS max_units,
        t."checkCooldown" AS check_cooldown, t."lowStock" AS low_stock, t.scope, t.key, t.fingerprint
        FROM unnest(p_idx) WITH ORDINALITY AS u(i, k),
          jsonb_to_record(p_items -> u.i) AS t(owner bigint, quantity integer, now bigint, "maxOrders" integer, "maxUnits" integer,
            "checkCooldown" boolean, "lowStock" integer, scope text, key text, fingerprint text)
        ORDER BY u.k LOOP
      -- The Idempotency-Key's claim, as place_order's: a replay or a reuse is the item's answer.
      claimed := false;
      IF r.key IS NOT NULL THEN
        FOR attempt IN 1..2 LOOP
          INSERT INTO idempotency_keys (scope, key, fingerprint, response, created_at)
            VALUES (r.scope, r.key, r.fingerprint, '', r.now) ON CONFLICT (scope, key) DO NOTHING;
          IF FOUND THEN claimed := true; EXIT; END IF;
          SELECT i.fingerprint, i.response, i.created_at INTO prior FROM idempotency_keys i
            WHERE i.scope = r.scope AND i.key = r.key FOR UPDATE;
          CONTINUE WHEN NOT FOUND;
          IF prior.created_at <= r.now - p_claim_ttl THEN
            UPDATE idempotency_keys SET fingerprint = r.fingerprint, response = '', created_at = r.now
              WHERE scope = r.scope AND key = r.key;
            claimed := true; EXIT;
          END IF;
          IF prior.fingerprint <> r.fingerprint THEN outcomes[r.k] := 'reused';
          ELSE outcomes[r.k] := 'replayed'; details[r.k] := prior.response;
          END IF;
          EXIT;
        END LOOP;
        CONTINUE WHEN outcomes[r.k] IS NOT NULL;
        IF NOT claimed THEN RAISE EXCEPTION 'idempotency claim kept vanishing'; END IF;
        -- Answered once the run is written: a placed order's response, a refusal's claim deleted.
        claims := claims || r.k;
      END IF;
      IF r.max_orders IS NOT NULL THEN
        c := array_position(cap_owners, r.owner);
        IF cap_orders[c] >= r.max_orders OR cap_units[c] + r.quantity > r.max_units THEN
          outcomes[r.k] := 'limit';
          details[r.k] := json_build_object('orders', cap_orders[c], 'units', cap_units[c])::text;
          CONTINUE;
        END IF;
      END IF;
      IF NOT swept THEN
        -- The first order past its cap: the pet's lapsed holds are swept (their cool-downs start),
        -- then the pet is locked and read, with the cool-downs of the run's owners.
        PERFORM sweep_expired_orders(the_pet, at_now, (p_items -> p_idx[1] ->> 'cooldownMs')::bigint);
        SELECT p.stock, p.status, p.version INTO left_stock, pet_status, pet_version FROM pets p WHERE p.id = the_pet FOR UPDATE;
        found_pet := FOUND;
        cooling_owners := ARRAY(SELECT DISTINCT (p_items -> i ->> 'owner')::bigint FROM unnest(p_idx) i
          WHERE (p_items -> i ->> 'checkCooldown')::boolean);
        SELECT array_agg(x.owner_key_id), array_agg(x.until) INTO cooling_owners, cooling_until FROM order_cooldowns x
          WHERE x.owner_key_id = ANY (cooling_owners) AND x.pet_id = the_pet;
        swept := true;
      END IF;
      IF r.check_cooldown THEN
        c := array_position(cooling_owners, r.owner);
        IF c IS NOT NULL AND cooling_until[c] > r.now THEN
          outcomes[r.k] := 'cooldown'; details[r.k] := cooling_until[c]::text;
          CONTINUE;
        END IF;
      END IF;
      IF NOT found_pet THEN
        outcomes[r.k] := 'refused';
        CONTINUE;
      END IF;
      IF pet_status <> 'available' OR left_stock < r.quantity THEN
        outcomes[r.k] := 'refused'; details[r.k] := json_build_object('status', pet_status, 'stock', left_stock)::text;
        CONTINUE;
      END IF;
      outcomes[r.k] := 'placed';
      placed := placed || r.k;
      left_stock := left_stock - r.quantity;
      pet_version := pet_version + 1;
      IF left_stock = 0 THEN pet_status := 'pending'; END IF;
      IF left_stock <= r.low_stock AND left_stock + r.quantity > r.low_stock THEN
        low_at := r.k;
        low_json := json_build_object('petId', the_pet, 'quantity', left_stock, 'status', pet_status, 'version', pet_version)::text;
      END IF;
      -- What the owner holds grows with each order placed, capped or not.
      c := array_position(cap_owners, r.owner);
      IF c IS NOT NULL THEN
        cap_orders[c] := cap_orders[c] + 1;
        cap_units[c] := cap_units[c] + r.quantity;
      END IF;
    END LOOP;
    IF cardinality(placed) > 0 THEN
      UPDATE pets SET stock = left_stock, status = pet_status, version = pet_version WHERE pets.id = the_pet;
      WITH made AS (
        INSERT INTO orders (pet_id, owner_key_id, quantity, ship_date, complete, created_at, expires_at)
          SELECT the_pet, t.owner, t.quantity, t."shipDate", false, t.now, t."expiresAt"
          FROM unnest(placed) WITH ORDINALITY AS u(k, n),
            jsonb_to_record(p_items -> p_idx[u.k]) AS t(owner bigint, quantity integer, "shipDate" bigint, now bigint, "expiresAt" bigint)
          ORDER BY u.n
          RETURNING orders.id, orders.version)
      SELECT array_agg(made.id ORDER BY made.id), array_agg(made.version ORDER BY made.id) INTO ids, versions FROM made;
      INSERT INTO events (id, type, created_at, audience, subject_key_id, data)
        SELECT e.id, e.type, e.created_at, e.audience, e.subject_key_id, e.data FROM (
          SELECT u.k::integer AS k, 0 AS after, coalesce(t."eventId", new_event_id()) AS id, 'order.created' AS type, t.now AS created_at,
            'order' AS audience, t.owner AS subject_key_id,
            order_json(ids[u.n::integer], the_pet, t.quantity, t."shipDate", false, t.owner, t.now, t."expiresAt", versions[u.n::integer]) AS data
          FROM unnest(placed) WITH ORDINALITY AS u(k, n),
            jsonb_to_record(p_items -> p_idx[u.k]) AS t(owner bigint, quantity integer, "shipDate" bigint, now bigint,
              "expiresAt" bigint, "eventId" text)
          UNION ALL
          SELECT low_at, 1, new_event_id(), 'inventory.low', (p_items -> p_idx[low_at] ->> 'now')::bigint, 'inventory', NULL,
            low_json WHERE low_at IS NOT NULL
        ) e ORDER BY e.k, e.after;
      UPDATE idempotency_keys k SET response = order_json(ids[u.n::integer], the_pet, t.quantity, t."shipDate", false,
          t.owner, t.now, t."expiresAt", versions[u.n::integer])
        FROM unnest(placed) WITH ORDINALITY AS u(k, n),
          jsonb_to_record(p_items -> p_idx[u.k]) AS t(owner bigint, quantity integer, "shipDate" bigint, now bigint,
            "expiresAt" bigint, scope text, key text)
        WHERE u.k = ANY (claims) AND k.scope = t.scope AND k.key = t.key;
    END IF;
    IF cardinality(claims) > 0 THEN
      DELETE FROM idempotency_keys k USING unnest(claims) AS cl(k),
          jsonb_to_record(p_items -> p_idx[cl.k]) AS t(scope text, key text)
        WHERE outcomes[cl.k] <> 'placed' AND k.scope = t.scope AND k.key = t.key;
    END IF;
    RETURN QUERY SELECT p_idx[u.k], outcomes[u.k], details[u.k], ids[pl.n::integer], CASE WHEN pl.n IS NULL THEN NULL ELSE the_pet END,
        CASE WHEN pl.n IS NULL THEN NULL ELSE t.owner END, CASE WHEN pl.n IS NULL THEN NULL ELSE t.quantity END,
        CASE WHEN pl.n IS NULL THEN NULL ELSE t."shipDate" END, CASE WHEN pl.n IS NULL THEN NULL ELSE false END,
        CASE WHEN pl.n IS NULL THEN NULL ELSE t.now END, CASE WHEN pl.n IS NULL THEN NULL ELSE t."expiresAt" END, versions[pl.n::integer]
      FROM generate_subscripts(p_idx, 1) AS u(k)
        LEFT JOIN unnest(placed) WITH ORDINALITY AS pl(k, n) ON pl.k = u.k,
        jsonb_to_record(p_items -> p_idx[u.k]) AS t(owner bigint, quantity integer, "shipDate" bigint, now bigint, "expiresAt" bigint);
  END
  $fn$;

  CREATE OR REPLACE FUNCTION place_orders (p_items jsonb, p_claim_ttl bigint)
  RETURNS TABLE (item integer, outcome text, detail text, id bigint, pet_id bigint, owner_key_id bigint, quantity integer,
    ship_date bigint, complete boolean, created_at bigint, expires_at bigint, version integer)
  LANGUAGE plpgsql AS $fn$
  #variable_conflict use_column
  DECLARE
    capped bigint;
    o record;
    run integer[] := '{}';
    run_pet bigint;
    run_keys text[] := '{}';
  BEGIN
    FOR capped IN SELECT DISTINCT (e->>'owner')::bigint FROM jsonb_array_elements(p_items) e
        WHERE e->>'maxOrders' IS NOT NULL ORDER BY 1 LOOP
      PERFORM pg_advisory_xact_lock(1869767794, (capped % 2147483647)::integer);
    END LOOP;
    FOR o IN SELECT (t.n - 1)::integer AS i, t.e FROM jsonb_array_elements(p_items) WITH ORDINALITY AS t(e, n)
        ORDER BY (t.e->>'pet')::bigint, t.n LOOP
      -- A run is one pet's; an order whose key is already in the run starts the next, so that it
      -- reads the answer the first one left.
      IF cardinality(run) > 0 AND ((o.e->>'pet')::bigint <> run_pet
          OR (o.e->>'key' IS NOT NULL AND jsonb_build_array(o.e->'scope', o.e->'key')::text = ANY (run_keys))) THEN
        RETURN QUERY SELECT * FROM place_order_run(p_items, run, p_claim_ttl);
        run := '{}';
        run_keys := '{}';
      END IF;
      run := run || o.i;
      run_pet := (o.e->>'pet')::bigint;
      IF o.e->>'key' IS NOT NULL THEN
        run_keys := run_keys || jsonb_build_array(o.e->'scope', o.e->'key')::text;
      END IF;
    END LOOP;
    IF cardinality(run) > 0 THEN
      RETURN QUERY SELECT * FROM place_order_run(p_items, run, p_claim_ttl);
    END IF;
  END
  $fn$;
  `
]
