// petstore openapi [--out FILE]: the document as served with the default configuration, so the
// committed docs/openapi.json can be regenerated (and diffed by a test).
import { writeFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import { buildApp } from '../app.ts'
import { loadConfig } from '../config.ts'
import { createMemoryRateLimiter } from '../ratelimit/memory.ts'
import { createSqliteStores } from '../storage/sqlite/index.ts'
import type { Io } from './io.ts'

export async function openApiDocument (): Promise<string> {
  const stores = createSqliteStores(':memory:')
  const app = await buildApp({ config: loadConfig({ DATABASE_URL: 'sqlite::memory:' }), stores, limiter: createMemoryRateLimiter() })
  try {
    await app.ready()
    return JSON.stringify(app.swagger(), null, 2) + '\n'
  } finally {
    await app.close()
    await stores.close()
  }
}

export async function openapi (args: string[], io: Io): Promise<number> {
  const { values } = parseArgs({ args, strict: true, options: { out: { type: 'string' } } })
  const document = await openApiDocument()
  if (values.out === undefined) io.out(document.trimEnd())
  else await writeFile(values.out, document)
  return 0
}
