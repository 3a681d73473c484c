// petstore openapi [--out FILE] [--server URL]: the document as served with the default
// configuration, so the committed docs/openapi.json can be regenerated (and diffed by a test).
// --server makes the server absolute, for tools that cannot resolve a relative one (a
// validating proxy, a generated test collection).
import { writeFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import { buildApp } from '../app.ts'
import { loadConfig } from '../config.ts'
import { createMemoryRateLimiter } from '../ratelimit/memory.ts'
import { createSqliteStores } from '../storage/sqlite/index.ts'
import type { Io } from './io.ts'

export async function openApiDocument (options: { server?: string } = {}): Promise<string> {
  const stores = createSqliteStores(':memory:')
  const app = await buildApp({ config: loadConfig({ DATABASE_URL: 'sqlite::memory:' }), stores, limiter: createMemoryRateLimiter() })
  try {
    await app.ready()
    const document = app.swagger() as unknown as Record<string, unknown>
    const json = options.server === undefined
      ? document
      : { ...document, servers: [{ url: absoluteServer(options.server), description: 'The API' }] }
    return JSON.stringify(json, null, 2) + '\n'
  } finally {
    await app.close()
    await stores.close()
  }
}

/** http://host:3000 or http://host:3000/v1 -> http://host:3000/v1 (the paths are under /v1). */
export function absoluteServer (url: string): string {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new Error(`--server must be an absolute http(s) URL such as http://127.0.0.1:3000, not ${JSON.stringify(url)}`)
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error(`--server must be an http or https URL, not ${JSON.stringify(url)}`)
  const path = parsed.pathname.replace(/\/+$/, '')
  return `${parsed.origin}${path.endsWith('/v1') ? path : `${path}/v1`}`
}

export async function openapi (args: string[], io: Io): Promise<number> {
  const { values } = parseArgs({ args, strict: true, options: { out: { type: 'string' }, server: { type: 'string' } } })
  if (values.server !== undefined) {
    try {
      absoluteServer(values.server)
    } catch (error) {
      io.err(`petstore openapi: ${(error as Error).message}`)
      return 2
    }
  }
  const document = await openApiDocument(values.server === undefined ? {} : { server: values.server })
  if (values.out === undefined) io.out(document.trimEnd())
  else await writeFile(values.out, document)
  return 0
}
