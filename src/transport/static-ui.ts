// A browser UI served by the API itself: an HTML page and the files it loads, nothing from another
// host. /console (the operator console) and /portal (the partner portal) are two; /docs is not
// (Scalar needs inline styles, so its CSP differs: openapi/docs.ts calls servePage itself).
//
// The page names each file as `{{shared.js}}`; staticUi replaces that with the file's versioned
// name under `<path>/assets/` (the name changes with the bytes, so the file is cached for a year
// and the page revalidates: servePage in transport/static.ts). The files are read and compressed
// on the first request, not at start, and then kept for every app of the process.
//
// Every answer of the plugin the UI is served from (Fastify encapsulation: the page, its assets,
// their 404s and any other route of that plugin) carries UI_CSP and no Referer. It lives here, in
// the transport, because a feature imports no other feature (eslint.config.js FEATURE_IMPORTS) and
// a route module may import transport/ but not http/.
import type { FastifyInstance } from 'fastify'
import { readFile } from 'node:fs/promises'
import { onceSucceeded, servePage, staticEntity, versionedAsset } from './static.ts'

/**
 * Scripts and styles from this origin only (no 'unsafe-inline', no 'unsafe-eval': the pages have
 * no inline script, style or handler, and charts are SVG built with DOM calls), fetch to this
 * origin only, no framing, no form target, no base URL.
 */
export const UI_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'"
].join('; ')

/** A file the page loads. */
export interface UiFile {
  /** Its name in the page (`{{shared.js}}`); the versioned name keeps its base and extension. */
  file: string
  /** Where its bytes are. */
  source: URL
  /** Its Content-Type. */
  type: string
}

export interface StaticUiOptions {
  /** The page's path (`/console`); the files are served under `<path>/assets/`. */
  path: string
  /** The HTML page. */
  html: URL
  /** The files the page names; asked for on the first request (again after a failure). */
  files: () => Promise<readonly UiFile[]>
}

/** `shared.js` → `shared` and `js`; a name without an extension is a mistake of the caller. */
function splitName (file: string): { base: string; extension: string } {
  const dot = file.lastIndexOf('.')
  if (dot <= 0 || dot === file.length - 1) throw new Error(`a UI file needs a name with an extension: ${file}`)
  return { base: file.slice(0, dot), extension: file.slice(dot + 1) }
}

/**
 * The UI of `options`, served by the returned function into the plugin it is given. The files
 * are read once per process (a failure is not kept: the next request reads again); the page is
 * made once per app, since it names the assets under the app's prefix.
 */
export function staticUi (options: StaticUiOptions): (app: FastifyInstance) => void {
  const loadFiles = onceSucceeded(async () => {
    const assets = await Promise.all((await options.files()).map(async (entry) => {
      const { base, extension } = splitName(entry.file)
      return { ...await versionedAsset(await readFile(entry.source), base, extension, entry.type), file: entry.file }
    }))
    return { assets, html: await readFile(options.html, 'utf8') }
  })

  return (app) => {
    app.addHook('onRequest', async (_request, reply) => {
      reply.header('content-security-policy', UI_CSP).header('referrer-policy', 'no-referrer')
    })
    servePage(app, {
      path: options.path,
      load: async (assetsPath) => {
        const { assets, html } = await loadFiles()
        let page = html
        for (const asset of assets) page = page.replaceAll(`{{${asset.file}}}`, assetsPath + asset.name)
        return { page: await staticEntity(page, 'text/html; charset=utf-8'), assets }
      }
    })
  }
}
