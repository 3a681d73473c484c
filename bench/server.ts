// The server half of `npm run bench`. bench/processes.ts starts this file as a child process
// (process.execPath, so the same Node, pinned to the server's core), so the load generator and
// the server never share an event loop or a core. Two modes:
//
//   node bench/server.ts bare                 node:http answering a small fixed JSON body
//   node bench/server.ts petstore '<json>'    the Petstore API, started by src/server.ts's
//                                             startServer, as `petstore serve` starts it
//
// Either way it listens on 127.0.0.1, port 0, and tells the parent the port over IPC
// ({ type: 'ready', port }). It answers 'rss' with its resident set size, and stops when the
// parent sends 'stop' or goes away.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { loadConfig } from '../src/config.ts'
import { startServer } from '../src/server.ts'

/** What the parent passes to a petstore child, as JSON in argv[3]. */
export interface PetstoreChildSettings {
  /**
   * The environment loadConfig reads (DATABASE_URL, REDIS_URL, LOG_LEVEL …), as a literal. A
   * REDIS_URL carries `?keyPrefix=` so the run's counters never mix with anyone else's.
   */
  env: Record<string, string>
}

export type ChildMessage =
  | { type: 'ready'; port: number }
  | { type: 'rss'; rss: number }

/** The baseline's whole answer: small and fixed, with the headers a JSON API sends anyway. */
export const BARE_BODY = Buffer.from(JSON.stringify({ id: 1, name: 'Rex', categoryId: 1, status: 'available' }))

function send (message: ChildMessage): void {
  process.send?.(message)
}

async function bare (): Promise<() => Promise<void>> {
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': BARE_BODY.length })
    response.end(BARE_BODY)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  send({ type: 'ready', port: (server.address() as AddressInfo).port })
  return () => new Promise<void>((resolve) => {
    server.close(() => resolve())
    server.closeAllConnections()
  })
}

/** The very composition `petstore serve` runs (logger, metrics, ban sync, drain), on port 0. */
async function petstore (settings: PetstoreChildSettings): Promise<() => Promise<void>> {
  const config = loadConfig({ ...settings.env, HOST: '127.0.0.1', PORT: '0' })
  const running = await startServer(config)
  send({ type: 'ready', port: Number(new URL(running.url).port) })
  return () => running.close()
}

async function main (): Promise<void> {
  const [mode, json] = process.argv.slice(2)
  let stop: () => Promise<void>
  if (mode === 'bare') stop = await bare()
  else if (mode === 'petstore' && json !== undefined) stop = await petstore(JSON.parse(json) as PetstoreChildSettings)
  else throw new Error('usage: node bench/server.ts bare | petstore <settings json> (started by bench/run.ts)')

  let stopping = false
  const shutdown = (): void => {
    if (stopping) return
    stopping = true
    stop().then(() => { process.exitCode = 0 }, (error: unknown) => {
      process.stderr.write(`bench server: stop failed: ${(error as Error).message}\n`)
      process.exitCode = 1
    }).finally(() => { if (process.connected) process.disconnect() })
  }
  process.on('message', (message) => {
    if (message === 'stop') shutdown()
    if (message === 'rss') send({ type: 'rss', rss: process.memoryUsage.rss() })
  })
  // The parent died or closed the channel: never outlive it.
  process.on('disconnect', shutdown)
  process.on('SIGTERM', shutdown)
  process.on('SIGINT', shutdown)
}

// Only when run, not when the parent imports BARE_BODY or the types.
if (import.meta.main) {
  main().catch((error: unknown) => {
    process.stderr.write(`bench server: ${(error as Error).message}\n`)
    process.exit(1)
  })
}
