// GET /openapi.json and GET /openapi.yaml: the finished document, and GET /arazzo.yaml, the
// workflows (openapi.ts), built and compressed on the first request (YAML's library loaded then
// too) (transport/static.ts), then revalidated by ETag. Outside /v1 and hidden from the document
// itself.
import { readFile } from 'node:fs/promises'
import type { FastifyInstance } from 'fastify'
import { onceSucceeded, sendStatic, staticEntity, type StaticEntity } from '../transport/static.ts'

/** The Arazzo description of the workflows of docs/api.md. */
export const ARAZZO_FILE = new URL('./workflows.arazzo.yaml', import.meta.url)

export interface ServeOpenApiOptions {
  /** Builds a served entity (compression in the thread pool); injectable so a test can make it fail. */
  entity?: (content: string, contentType: string) => Promise<StaticEntity>
}

/** The document, built once when the app is ready, and the routes that serve it. */
export function serveOpenApi (app: FastifyInstance, options: ServeOpenApiOptions = {}): void {
  const entity = options.entity ?? staticEntity
  // A failed build is not kept: the next request builds again (issue 18).
  const document = () => app.swagger()
  const json = onceSucceeded(() => entity(JSON.stringify(document()), 'application/json; charset=utf-8'))
  // yaml is loaded on the first GET /openapi.yaml: a server that is never asked for it does not
  // keep the library (about 1 MiB of heap) in memory (docs/performance.md, "Memory").
  const yaml = onceSucceeded(async () => {
    const { stringify } = await import('yaml')
    return await entity(stringify(document()), 'application/yaml; charset=utf-8')
  })
  // The documented workflows (Arazzo 1.0): a file beside this one; its source description is
  // ./openapi.json, which resolves to the document served above.
  const arazzo = onceSucceeded(async () => entity(await readFile(ARAZZO_FILE, 'utf8'), 'application/yaml; charset=utf-8'))
  app.get('/arazzo.yaml', { schema: { hide: true } }, async (request, reply) => sendStatic(request, reply, await arazzo(), 'no-cache'))
  app.get('/openapi.json', { schema: { hide: true } }, async (request, reply) => sendStatic(request, reply, await json(), 'no-cache'))
  app.get('/openapi.yaml', { schema: { hide: true } }, async (request, reply) => sendStatic(request, reply, await yaml(), 'no-cache'))
}
