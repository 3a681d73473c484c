// /console: the operator console (docs/product.md section 10), served by the API like /docs.
// GET /console is a small HTML page naming its assets by versioned names; GET
// /console/assets/* serves them (shared.js, shared.css, console.js, console.css) compressed, with the same caching as
// the docs assets (transport/static.ts servePage: immutable for a year, the page revalidates).
// Everything the page does goes through the public admin API with the operator's key.
//
// Content-Security-Policy, on every console response: scripts and styles from this origin only
// (no 'unsafe-inline', no 'unsafe-eval': the page has no inline script, style or handler, and
// the chart is SVG built with DOM calls), fetch to this origin only, no framing, no form target,
// no base URL. Nothing is loaded from another host.
import type { FastifyInstance } from 'fastify'
import { readFile } from 'node:fs/promises'
import { onceSucceeded, servePage, staticEntity, versionedAsset } from '../transport/static.ts'

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

// shared.{js,css}: the layout, tables and chart /portal uses too (src/portal/ui/assets.json names them).
const FILES = [
  { file: 'shared.js', base: 'shared', extension: 'js', type: 'text/javascript; charset=utf-8' },
  { file: 'shared.css', base: 'shared', extension: 'css', type: 'text/css; charset=utf-8' },
  { file: 'console.js', base: 'console', extension: 'js', type: 'text/javascript; charset=utf-8' },
  { file: 'console.css', base: 'console', extension: 'css', type: 'text/css; charset=utf-8' }
] as const

// Read and compressed on the first request, then kept (they never change while the process
// runs), once for every app of the process.
const loadFiles = onceSucceeded(async () => {
  const assets = await Promise.all(FILES.map(async (f) => ({
    ...await versionedAsset(await readFile(new URL(`./${f.file}`, import.meta.url)), f.base, f.extension, f.type),
    file: f.file
  })))
  return { assets, html: await readFile(new URL('./console.html', import.meta.url), 'utf8') }
})

export async function consoleRoutes (app: FastifyInstance): Promise<void> {
  // This plugin's routes only (Fastify encapsulation): the page, its assets and their 404s.
  app.addHook('onRequest', async (_request, reply) => {
    reply.header('content-security-policy', CONSOLE_CSP).header('referrer-policy', 'no-referrer')
  })
  servePage(app, {
    path: '/console',
    load: async (assetsPath) => {
      const { assets, html } = await loadFiles()
      let page = html
      for (const asset of assets) page = page.replaceAll(`{{${asset.file}}}`, assetsPath + asset.name)
      return { page: await staticEntity(page, 'text/html; charset=utf-8'), assets }
    }
  })
}
