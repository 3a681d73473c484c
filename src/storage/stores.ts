// The set of ports an engine provides. infra.ts picks the engine from the configuration.
import type { EventStore } from '../events/events.store.ts'
import type { CategoryStore } from '../categories/categories.store.ts'
import type { InventoryStore } from '../inventory/inventory.store.ts'
import type { KeyStore } from '../accounts/keys.store.ts'
import type { OrderStore } from '../orders/orders.store.ts'
import type { PetStore } from '../pets/pets.store.ts'
import type { WebhookStore } from '../webhooks/webhooks.store.ts'

export interface Stores {
  readonly engine: 'sqlite' | 'postgres'
  readonly pets: PetStore
  readonly categories: CategoryStore
  readonly orders: OrderStore
  readonly inventory: InventoryStore
  readonly keys: KeyStore
  /** The events every change above writes in its own transaction (the outbox), and their feed. */
  readonly events: EventStore
  /** Webhook endpoints, their deliveries and attempts (webhooks/). */
  readonly webhooks: WebhookStore
  /** Connections of the engine's pool (metrics); absent where there is no pool (SQLite). */
  poolStats? (): { total: number; idle: number; waiting: number }
  /** Size in bytes of the write-ahead log (metrics); absent where there is none (PostgreSQL). */
  walBytes? (): number
  /** Resolves when the database answers; rejects otherwise (readiness). */
  ping (): Promise<void>
  close (): Promise<void>
}
