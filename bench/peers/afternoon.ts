// The peer `npm run bench -- --peers` measures us against (issue 51 item 4): the smallest Fastify
// app a user would write in an afternoon for the same two requests. node:sqlite (WAL, and
// synchronous=FULL, so an acknowledged order survives a power loss as ours does), an API-key
// lookup hook (a query per request, no cache), a per-key minute window with the two
// X-RateLimit headers, and the same JSON as ours for a pet and an order. No usage, bans,
// lifecycle headers, events, audit, idempotency or group commit: what we add is what it lacks.
//
// Not shipped: bench/ is outside the image (.dockerignore) and the package publishes nothing.
import { createHash } from 'node:crypto'
import { DatabaseSync } from 'node:sqlite'
import Fastify, { type FastifyInstance } from 'fastify'

const HOLD_MS = 30 * 60_000
const WINDOW_MS = 60_000

export const hashKey = (key: string): string => createHash('sha256').update(key).digest('hex')

/** Opens (and creates) the app's database: the file, its pragmas, its three tables. */
export function openAfternoonDb (file: string): DatabaseSync {
  const db = new DatabaseSync(file)
  db.exec('PRAGMA journal_mode = WAL')
  db.exec('PRAGMA synchronous = FULL')
  db.exec(`CREATE TABLE IF NOT EXISTS pets (id INTEGER PRIMARY KEY, name TEXT NOT NULL,
      category_id INTEGER NOT NULL, status TEXT NOT NULL, stock INTEGER NOT NULL DEFAULT 0);
    CREATE TABLE IF NOT EXISTS api_keys (id INTEGER PRIMARY KEY, key_hash TEXT NOT NULL UNIQUE,
      per_minute INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, pet_id INTEGER NOT NULL REFERENCES pets,
      key_id INTEGER NOT NULL, quantity INTEGER NOT NULL, complete INTEGER NOT NULL DEFAULT 0,
      expires_at INTEGER NOT NULL)`)
  return db
}

interface KeyRow { id: number; per_minute: number }
interface PetRow { id: number; name: string; category_id: number; status: string }
interface Window { start: number; used: number }

declare module 'fastify' {
  interface FastifyRequest { keyId: number }
}

const error = (code: string, message: string) => ({ error: { code, message } })

export function buildAfternoonApp (file: string): FastifyInstance {
  const db = openAfternoonDb(file)
  const keyByHash = db.prepare('SELECT id, per_minute FROM api_keys WHERE key_hash = ?')
  const petById = db.prepare('SELECT id, name, category_id, status FROM pets WHERE id = ?')
  const takeStock = db.prepare(`UPDATE pets SET stock = stock - :q,
    status = CASE WHEN stock = :q THEN 'pending' ELSE status END
    WHERE id = :id AND status = 'available' AND stock >= :q RETURNING stock`)
  const insertOrder = db.prepare('INSERT INTO orders (pet_id, key_id, quantity, expires_at) VALUES (?, ?, ?, ?) RETURNING id')
  const windows = new Map<number, Window>()

  const app = Fastify({ logger: false })
  app.decorateRequest('keyId', 0)
  app.addHook('onRequest', async (request, reply) => {
    const key = request.headers['x-api-key']
    const row = typeof key === 'string' ? keyByHash.get(hashKey(key)) as KeyRow | undefined : undefined
    if (row === undefined) return reply.code(401).send(error('unauthorized', 'a valid X-API-Key is required'))
    const now = Date.now()
    let window = windows.get(row.id)
    if (window === undefined || now - window.start >= WINDOW_MS) windows.set(row.id, window = { start: now, used: 0 })
    window.used++
    void reply.header('x-ratelimit-limit', row.per_minute)
    void reply.header('x-ratelimit-remaining', Math.max(0, row.per_minute - window.used))
    if (window.used > row.per_minute) return reply.code(429).send(error('rate_limited', 'too many requests'))
    request.keyId = row.id
  })

  app.get<{ Params: { id: string } }>('/v1/pets/:id', {
    schema: { params: { type: 'object', properties: { id: { type: 'integer', minimum: 1 } } } }
  }, async (request, reply) => {
    const row = petById.get(request.params.id) as PetRow | undefined
    if (row === undefined) return reply.code(404).send(error('pet_not_found', 'no such pet'))
    return { id: row.id, name: row.name, categoryId: row.category_id, status: row.status }
  })

  app.post<{ Body: { petId: number; quantity: number } }>('/v1/store/orders', {
    schema: {
      body: {
        type: 'object',
        required: ['petId', 'quantity'],
        additionalProperties: false,
        properties: { petId: { type: 'integer', minimum: 1 }, quantity: { type: 'integer', minimum: 1, maximum: 1000 } }
      }
    }
  }, async (request, reply) => {
    const { petId, quantity } = request.body
    const expiresAt = Date.now() + HOLD_MS
    // One transaction: the stock and the order together; its COMMIT waits for the fsync.
    db.exec('BEGIN IMMEDIATE')
    let id: number
    try {
      if (takeStock.get({ id: petId, q: quantity }) === undefined) {
        db.exec('ROLLBACK')
        return reply.code(409).send(error('insufficient_stock', `pet ${petId} cannot be ordered`))
      }
      id = Number((insertOrder.get(petId, request.keyId, quantity, expiresAt) as { id: number }).id)
      db.exec('COMMIT')
    } catch (failure) {
      if (db.isTransaction) db.exec('ROLLBACK')
      throw failure
    }
    return reply.code(201).header('location', `/v1/store/orders/${id}`)
      .send({ id, petId, quantity, complete: false, expiresAt: new Date(expiresAt).toISOString() })
  })

  app.addHook('onClose', async () => { db.close() })
  return app
}
