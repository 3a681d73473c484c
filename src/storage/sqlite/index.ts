// The SQLite engine: every port of stores.ts's list on one node:sqlite connection.
import { buildPorts, type Stores } from '../stores.ts'
import { walBytes } from './checkpoint.ts'
import { createSqliteAuditAppend } from './audit.ts'
import { migrateSqlite, openSqlite } from './database.ts'
import { createSqliteEventLog } from './events.ts'
import { createSqliteIdempotency } from './idempotency.ts'
import { createPetCache, type PetCacheOptions } from './pet-cache.ts'
import { createWriter, type Writer, type WriterOptions } from './writer.ts'
import { bindActor, currentActor } from '../../shared/actor-context.ts'

export interface SqliteStores extends Stores { readonly engine: 'sqlite' }

/** Opens the file (or ':memory:'), applies migrations unless told not to, and builds the stores. */
export function createSqliteStores (
  path: string,
  options: { migrate?: boolean; petCache?: PetCacheOptions } & WriterOptions = {}
): SqliteStores {
  const db = openSqlite(path)
  if (options.migrate !== false) migrateSqlite(db)
  // Writes of the catalogue and of orders go through the writer (writer.ts): durable commits
  // that never block the event loop on the disk or on another process's lock.
  const writer = actorBound(createWriter(db, path, options))
  const audit = createSqliteAuditAppend(db)
  const ping = db.prepare('SELECT 1')
  return {
    engine: 'sqlite',
    // Every port of stores.ts's list, on this connection.
    ...buildPorts('sqlite', {
      db,
      writer,
      idempotency: createSqliteIdempotency(db),
      pets: createPetCache(db, options.petCache),
      // The outbox every store appends its events to, inside the writer's callback (events.ts).
      eventLog: createSqliteEventLog(db, audit, currentActor),
      audit,
      actor: currentActor
    }),
    async ping () { ping.get() },
    walBytes: () => walBytes(path),
    async close () {
      await writer.close()
      if (db.isOpen) db.close()
    }
  }
}

/**
 * The writer runs a write later, in a batch with other callers' writes: each write keeps the
 * actor of the caller that queued it (shared/actor-context.ts), for its audit entry. The one
 * place the actor crosses from a caller to the writer's batch.
 */
function actorBound (writer: Writer): Writer {
  return { run: (fn, options) => writer.run(bindActor(fn), options), close: () => writer.close() }
}
