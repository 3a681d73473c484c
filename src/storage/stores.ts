// The ports every engine provides, listed once: each entry builds its port on SQLite and on
// PostgreSQL, from what that engine's index.ts opened. A new port is one entry here; the engines'
// index.ts walk the list (buildPorts) and never name a port. infra.ts picks the engine.
//
// Who makes a change (the audit actor, shared/actor-context.ts) is part of what the ports are
// built on: SQLite's context hands its ActorSource (`actor`) to the stores that audit, and
// PostgreSQL's transactions carry it (`tx.actor`). Every audit entry goes through the engine's
// one audit door with it (docs/architecture.md, "The audit actor").
import type { AuditStore } from '../audit/audit.store.ts'
import type { EventStore } from '../events/events.store.ts'
import type { CategoryStore } from '../categories/categories.store.ts'
import type { InventoryStore } from '../inventory/inventory.store.ts'
import type { KeyStore } from '../accounts/keys.store.ts'
import type { OrderStore } from '../orders/orders.store.ts'
import type { PetStore } from '../pets/pets.store.ts'
import type { WebhookStore } from '../webhooks/webhooks.store.ts'
import type { KeyRequestStore } from '../key-requests/key-requests.store.ts'
import { createSqliteKeyRequestStore } from './sqlite/key-requests.ts'
import { createPostgresKeyRequestStore } from './postgres/key-requests.ts'
import type { PortalStore } from '../portal/portal.store.ts'
import type { ActorSource } from '../shared/actor-context.ts'
import type { SqliteAuditAppend } from './sqlite/audit.ts'
import type { Db as SqliteDb } from './sqlite/database.ts'
import type { SqliteEventLog } from './sqlite/events.ts'
import type { SqliteIdempotency } from './sqlite/idempotency.ts'
import type { PetCache } from './sqlite/pet-cache.ts'
import type { Writer } from './sqlite/writer.ts'
import type { Db as PostgresDb } from './postgres/database.ts'
import type { PostgresIdempotency } from './postgres/idempotency.ts'
// The engines' feature files. PostgreSQL's load no driver (postgres/database.ts imports pg, and
// only postgres/index.ts, imported when DATABASE_URL names PostgreSQL, imports it).
import { createSqliteAuditStore } from './sqlite/audit.ts'
import { createSqliteCategoryStore } from './sqlite/categories.ts'
import { createSqliteEventStore } from './sqlite/events.ts'
import { createSqliteInventoryStore } from './sqlite/inventory.ts'
import { createSqliteKeyStore } from './sqlite/keys.ts'
import { createSqliteOrderStore } from './sqlite/orders.ts'
import { createSqlitePetStore } from './sqlite/pets.ts'
import { createSqliteWebhookStore } from './sqlite/webhooks.ts'
import { createSqlitePortalStore } from './sqlite/portal.ts'
import { createPostgresAuditStore } from './postgres/audit.ts'
import { createPostgresCategoryStore } from './postgres/categories.ts'
import { createPostgresEventStore } from './postgres/events.ts'
import { createPostgresInventoryStore } from './postgres/inventory.ts'
import { createPostgresKeyStore } from './postgres/keys.ts'
import { createPostgresOrderStore } from './postgres/orders.ts'
import { createPostgresPetStore } from './postgres/pets.ts'
import { createPostgresWebhookStore } from './postgres/webhooks.ts'
import { createPostgresPortalStore } from './postgres/portal.ts'

/** What sqlite/index.ts opened, that SQLite's ports are built on. */
export interface SqliteContext {
  readonly db: SqliteDb
  /** Durable writes off the event loop (writer.ts). */
  readonly writer: Writer
  readonly idempotency: SqliteIdempotency
  /** The pets held in memory, shared by the stores that change them (pet-cache.ts). */
  readonly pets: PetCache
  /** The outbox every store appends its events to, inside the writer's callback (events.ts). */
  readonly eventLog: SqliteEventLog
  /** The audit door (audit.ts): every audit entry is appended through it, the event log's included. */
  readonly audit: SqliteAuditAppend
  /** Who makes the change a port is called for: read in the writer's callback, which runs as its caller. */
  readonly actor: ActorSource
}

/** What postgres/index.ts opened, that PostgreSQL's ports are built on. */
export interface PostgresContext {
  /**
   * The instance's pool (database.ts). Its transactions carry the actor of their change (`tx.actor`,
   * taken from the engine's ActorSource when they begin) to the audit door (audit.ts).
   */
  readonly db: PostgresDb
  readonly idempotency: PostgresIdempotency
}

interface EngineContexts { sqlite: SqliteContext; postgres: PostgresContext }

export type Engine = keyof EngineContexts

/** How each engine builds one port. */
export type PortFactories<P> = { readonly [E in Engine]: (context: EngineContexts[E]) => P }

/** One entry of PORTS, checked against its port's interface. */
function port<P> (factories: PortFactories<P>): PortFactories<P> {
  return factories
}

export const PORTS = {
  pets: port<PetStore>({
    sqlite: (c) => createSqlitePetStore(c.db, c.writer, c.idempotency, c.pets, c.eventLog),
    postgres: (c) => createPostgresPetStore(c.db, c.idempotency)
  }),
  categories: port<CategoryStore>({
    sqlite: (c) => createSqliteCategoryStore(c.db, c.writer, c.eventLog),
    postgres: (c) => createPostgresCategoryStore(c.db)
  }),
  orders: port<OrderStore>({
    sqlite: (c) => createSqliteOrderStore(c.db, c.writer, c.idempotency, c.pets, c.eventLog),
    postgres: (c) => createPostgresOrderStore(c.db, c.idempotency)
  }),
  inventory: port<InventoryStore>({
    sqlite: (c) => createSqliteInventoryStore(c.db, c.writer, c.pets, c.eventLog),
    postgres: (c) => createPostgresInventoryStore(c.db)
  }),
  keys: port<KeyStore>({
    sqlite: (c) => createSqliteKeyStore(c.db, c.eventLog, c.writer),
    postgres: (c) => createPostgresKeyStore(c.db)
  }),
  /** The events every change above writes in its own transaction (the outbox), and their feed. */
  events: port<EventStore>({
    sqlite: (c) => createSqliteEventStore(c.db, c.writer, c.eventLog),
    postgres: (c) => createPostgresEventStore(c.db)
  }),
  /** Webhook endpoints, their deliveries and attempts (webhooks/). */
  webhooks: port<WebhookStore>({
    sqlite: (c) => createSqliteWebhookStore(c.db, c.writer, c.eventLog, c.audit, c.actor),
    postgres: (c) => createPostgresWebhookStore(c.db)
  }),
  /** The audit log's reads; its entries are appended with the events (each engine's audit.ts). */
  audit: port<AuditStore>({
    sqlite: (c) => createSqliteAuditStore(c.db),
    postgres: (c) => createPostgresAuditStore(c.db)
  }),
  /** Each key's own request log, written in batches by the recorder (key-requests/). */
  keyRequests: port<KeyRequestStore>({
    sqlite: (c) => createSqliteKeyRequestStore(c.db, c.writer),
    postgres: (c) => createPostgresKeyRequestStore(c.db)
  }),
  /** The partner portal's one-time links and sessions (portal/). */
  portal: port<PortalStore>({
    sqlite: (c) => createSqlitePortalStore(c.db, c.writer),
    postgres: (c) => createPostgresPortalStore(c.db)
  })
}

/** Every port of PORTS, by its name. */
export type Ports = { readonly [K in keyof typeof PORTS]: typeof PORTS[K] extends PortFactories<infer P> ? P : never }

/** Builds every port of PORTS on one engine. */
export function buildPorts<E extends Engine> (engine: E, context: EngineContexts[E]): Ports {
  const ports: Partial<Record<keyof Ports, unknown>> = {}
  for (const name of Object.keys(PORTS) as Array<keyof Ports>) {
    const factories: PortFactories<unknown> = PORTS[name]
    ports[name] = factories[engine](context)
  }
  // Every name of PORTS got its port just above, each built by a factory typed with that port.
  return ports as Ports
}

/** The ports of one engine, and what the process asks of the engine itself. */
export interface Stores extends Ports {
  readonly engine: Engine
  /** Connections of the engine's pool (metrics); absent where there is no pool (SQLite). */
  poolStats? (): { total: number; idle: number; waiting: number }
  /** Size in bytes of the write-ahead log (metrics); absent where there is none (PostgreSQL). */
  walBytes? (): number
  /** Resolves when the database answers; rejects otherwise (readiness). */
  ping (): Promise<void>
  close (): Promise<void>
}
