// The WAL checkpoint keeps its disk waits off the event loop (issue 20 item 3): the serving
// connection never checkpoints by itself (wal_autocheckpoint=0: SQLite's automatic checkpoint ran
// inside the committing call, on the event loop, with its fsyncs), and the checkpointer, on this
// thread with its fsyncs on libuv's pool and no worker (issue 34 item 1), keeps the WAL bounded
// under a write loop, every acknowledged write kept.
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { DatabaseSync } from 'node:sqlite'
import { test, type TestContext } from 'node:test'
import { loadConfig } from '../../../src/config.ts'
import { createLogger, startServer } from '../../../src/server.ts'
import { WAL_SIZE_LIMIT_BYTES, walBytes } from '../../../src/storage/sqlite/checkpoint.ts'
import { openSqlite } from '../../../src/storage/sqlite/database.ts'
import { createWriter } from '../../../src/storage/sqlite/writer.ts'
import { tempDir } from '../../helpers/temp.ts'
import { countRows as count } from './writer-helpers.ts'

const ROW_BYTES = 8192
const ROWS = 4000 // 32 MiB of rows: eight times the WAL's size limit

/** Writes ROWS rows of ROW_BYTES through a writer, 10 at a time; the WAL's size after each 10. */
async function writeLoop (
  t: TestContext,
  checkpointIntervalMs: number
): Promise<{ path: string; walSizes: number[]; rows: number; db: DatabaseSync; close (): Promise<void> }> {
  const path = join(tempDir(t, 'petstore-checkpoint-'), 'petstore.db')
  const db = openSqlite(path)
  db.exec('CREATE TABLE t (x BLOB)')
  const writer = createWriter(db, path, { checkpointIntervalMs })
  const insert = db.prepare('INSERT INTO t (x) VALUES (?)')
  const row = new Uint8Array(ROW_BYTES).fill(7)
  const walSizes: number[] = []
  let rows = 0
  while (rows < ROWS) {
    await Promise.all(Array.from({ length: 10 }, () => writer.run(() => insert.run(row))))
    rows += 10
    walSizes.push(walBytes(path))
  }
  let closed = false
  const close = async () => {
    if (closed) return
    closed = true
    await writer.close()
    db.close()
  }
  t.after(close)
  return { path, walSizes, rows, db, close }
}

/** The worker threads (worker_threads) of this process, by their name in /proc. */
const workers = (): number => readdirSync('/proc/self/task').filter((tid) => {
  try { return readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim() === 'WorkerThread' } catch { return false }
}).length

test('the serving connection never checkpoints: with the checkpoint off, the WAL holds all 32 MiB written', async (t) => {
  // Fault caught: SQLite's automatic checkpoint (every 1000 pages) running in the committing call,
  // on the event loop; it kept the WAL near 4 MiB by stalling the writes that crossed it.
  const { path, walSizes, db } = await writeLoop(t, 0)
  assert.equal(db.prepare('PRAGMA wal_autocheckpoint').get()?.wal_autocheckpoint, 0)
  assert.ok(walSizes.every((size, i) => i === 0 || size >= walSizes[i - 1]!), 'never started over')
  assert.ok(walSizes.at(-1)! >= ROWS * ROW_BYTES, `the WAL reached ${walSizes.at(-1)} bytes`)
  assert.equal(count(path), ROWS)
})

test('the checkpoint keeps the WAL bounded under a write loop without a worker thread, and every acknowledged write is in the file', async (t) => {
  // Faults caught: a WAL that grows without bound once the automatic checkpoint is off (under a
  // steady stream of writes a checkpoint that lets them go on never copies the WAL whole, so it
  // never starts over); and the checkpoint back on a worker thread (an isolate of about 10 MiB).
  // The bound is the size limit plus what is written between two ticks.
  const { path, walSizes, rows, close } = await writeLoop(t, 20)
  const largest = Math.max(...walSizes)
  t.diagnostic(`largest WAL: ${largest} bytes of ${rows * ROW_BYTES} written`)
  assert.ok(largest <= 2 * WAL_SIZE_LIMIT_BYTES, `the WAL reached ${largest} bytes (bound ${2 * WAL_SIZE_LIMIT_BYTES})`)
  assert.equal(workers(), 0, 'no worker thread')
  assert.equal(count(path), rows, 'read by another connection while the process runs')
  await close()
  assert.equal(walBytes(path), 0, 'closed cleanly: the last connection checkpointed and removed the WAL')
  assert.equal(count(path), rows, 'every row is in the database file')
})

test('GET /metrics reports the WAL size (sqlite_wal_bytes) and the event loop lag (nodejs_eventloop_lag_p99_seconds)', async (t) => {
  // Fault caught: an operator cannot see a WAL that grows or a loop that stalls.
  const path = join(tempDir(t, 'petstore-checkpoint-'), 'petstore.db')
  const config = loadConfig({ DATABASE_URL: `sqlite:${path}`, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'silent' })
  const server = await startServer(config, { logger: createLogger(config) })
  t.after(() => server.close())
  // /metrics is served on the private listener only (transport/ops-listener.ts).
  // The background jobs may write meanwhile: the size reported lies between the file's sizes
  // before and after the scrape.
  const before = walBytes(path)
  const response = await fetch(`${server.metricsUrl}/metrics`)
  assert.equal(response.status, 200)
  const text = await response.text()
  const after = walBytes(path)
  const wal = /^sqlite_wal_bytes (\d+)$/m.exec(text)
  assert.ok(wal !== null, 'sqlite_wal_bytes is exported')
  const reported = Number(wal[1])
  assert.ok(reported > 0 && before <= reported && reported <= after, `sqlite_wal_bytes ${reported}, the file ${before} before the scrape and ${after} after`)
  assert.match(text, /^nodejs_eventloop_lag_p99_seconds \d/m)
})
