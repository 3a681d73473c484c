// json-server (the npm package, a devDependency) as `json-server db.json` runs it, at its
// defaults: its CLI's composition (lib/cli/run.js createApp) with the CLI's default options, the
// request logger on (to stdout, which the bench sends to /dev/null, as ours), CORS, gzip and the
// body parser, and the file database lowdb's FileAsync keeps (the whole file rewritten on each
// change). Built here rather than through the CLI so that the bench's server child can report
// its CPU time and memory as it does for ours; only the port differs (0, not 3000).
import { writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import type { AddressInfo } from 'node:net'
import type { Server } from 'node:http'

const require = createRequire(import.meta.url)

interface Express { use (handler: unknown): void; listen (port: number, host: string, done: () => void): Server }
interface JsonServer {
  create (): Express
  defaults (options: Record<string, unknown>): unknown
  router (db: unknown, options?: Record<string, unknown>): { db: { _: { id: string } } }
}

export interface PeerPet { id: number; name: string; categoryId: number; status: string }

/** db.json: the catalogue as json-server serves it (`/pets/{id}`), and no orders yet (`POST /orders`). */
export async function writeJsonServerDb (file: string, pets: PeerPet[]): Promise<void> {
  await writeFile(file, JSON.stringify({ pets, orders: [] }, null, 2))
}

export async function startJsonServer (file: string): Promise<{ port: number; close: () => Promise<void> }> {
  const jsonServer = require('json-server') as JsonServer
  // lowdb as the CLI loads a .json file (lib/cli/utils/load.js), from json-server's own dependencies.
  const fromJsonServer = createRequire(require.resolve('json-server'))
  const low = fromJsonServer('lowdb') as (adapter: unknown) => Promise<unknown>
  const FileAsync = fromJsonServer('lowdb/adapters/FileAsync') as new (file: string) => unknown
  const db = await low(new FileAsync(file))
  const app = jsonServer.create()
  // The CLI's defaults: --foreignKeySuffix Id, --id id, not --quiet, --readOnly, --noCors or --noGzip.
  const router = jsonServer.router(db, { foreignKeySuffix: 'Id' })
  app.use(jsonServer.defaults({
    logger: true, readOnly: undefined, noCors: undefined, noGzip: undefined, bodyParser: true
  }))
  router.db._.id = 'id'
  app.use(router)
  const server = await new Promise<Server>((resolve) => { const s = app.listen(0, '127.0.0.1', () => resolve(s)) })
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => { server.close(() => resolve()); server.closeAllConnections() })
  }
}
