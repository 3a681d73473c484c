// /console: the operator console (docs/product.md section 10), served by the API like /docs.
// GET /console is a small HTML page naming its two assets by versioned names; GET
// /console/assets/* serves them (console.js, console.css) compressed, with the same caching as
// the docs assets (immutable for a year: a new version has a new name; the page revalidates).
// Everything the page does goes through the public admin API with the operator's key.
//
// Content-Security-Policy, on every console response: scripts and styles from this origin only
// (no 'unsafe-inline', no 'unsafe-eval': the page has no inline script, style or handler, and
// the chart is SVG built with DOM calls), fetch to this origin only, no framing, no form target,
// no base URL. Nothing is loaded from another host.
import type { FastifyInstance } from 'fastify'
import { readFile } from 'node:fs/promises'
import { sendStatic, staticEntity, type StaticEntity } from '../http/static.ts'

export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'"
].join('; ')

/** As for the docs assets (openapi/docs.ts): the name changes with the bytes. */
const IMMUTABLE = 'public, max-age=31536000, immutable'

interface Asset extends StaticEntity { name: string }

const FILES = [
  { file: 'console.js', base: 'console', extension: 'js', type: 'text/javascript; charset=utf-8' },
  { file: 'console.css', base: 'console', extension: 'css', type: 'text/css; charset=utf-8' }
] as const

interface Loaded { page: StaticEntity; byName: Map<string, Asset> }

// Read and compressed on the first request, then kept (they never change while the process runs).
let loaded: Promise<Loaded> | undefined
function load (assetsPath: string): Promise<Loaded> {
  loaded ??= (async () => {
    const assets = await Promise.all(FILES.map(async (f) => {
      const entity = await staticEntity(await readFile(new URL(`./${f.file}`, import.meta.url)), f.type)
      return { ...entity, name: `${f.base}.${entity.hash.slice(0, 16)}.${f.extension}`, file: f.file }
    }))
    let html = await readFile(new URL('./console.html', import.meta.url), 'utf8')
    for (const asset of assets) html = html.replaceAll(`{{${asset.file}}}`, assetsPath + asset.name)
    return { page: await staticEntity(html, 'text/html; charset=utf-8'), byName: new Map(assets.map((a) => [a.name, a])) }
  })()
  loaded.catch(() => { loaded = undefined })
  return loaded
}

export async function consoleRoutes (app: FastifyInstance): Promise<void> {
  const assetsPath = `${app.prefix}/console/assets/`
  // This plugin's routes only (Fastify encapsulation): the page and its assets.
  app.addHook('onRequest', async (_request, reply) => {
    reply.header('content-security-policy', CONSOLE_CSP).header('referrer-policy', 'no-referrer')
  })

  app.get('/console', { schema: { hide: true } }, async (request, reply) => {
    const { page } = await load(assetsPath)
    return sendStatic(request, reply, page, 'no-cache')
  })

  app.get<{ Params: { '*': string } }>('/console/assets/*', { schema: { hide: true } }, async (request, reply) => {
    const asset = (await load(assetsPath)).byName.get(request.params['*'])
    if (asset === undefined) {
      reply.callNotFound()
      return reply
    }
    return sendStatic(request, reply, asset, IMMUTABLE)
  })
}
