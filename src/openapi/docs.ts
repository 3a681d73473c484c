// /docs: the live OpenAPI document (fetched from opts.specUrl when the page loads) rendered by
// Scalar's API reference, served entirely by the API itself (no CDN, works offline). GET /docs
// is a small HTML page; GET /docs/assets/* serves Scalar's standalone browser bundle, vendored in
// src/openapi/docs/vendor/, and our boot script, src/openapi/docs/docs-init.js, which configures Scalar.
//
// The per-operation try-it switch (`x-hideTryItPanel: true`, docs/product.md section 7). Scalar
// 1.72 has only a global switch (`hideTestRequestButton`). Its API client (the modal behind
// "Test Request") opens only from that button (`hideClientButton` removes the other entry point,
// a link to client.scalar.com), but once open it reaches every operation: through its sidebar,
// its address bar, and the page's search (Ctrl+K), which also switches an open client to the
// operation picked.
// Rejected hooks:
// - `onBeforeRequest` / client-plugin `beforeRequest`: they run inside an open client, and a
//   hook that throws surfaces as an unhandled rejection, not as a message to the reader.
// - `operationTitleSource`: it only changes labels.
// - A DOM post-processor or MutationObserver: Scalar renders operations lazily as they scroll
//   into view and re-renders them, so it would race Vue, and removing nodes Vue owns breaks it.
// - A fork or a hand-written renderer: not maintained (docs/product.md 7.2 rules it out).
// Chosen: three documented Scalar configuration options, all derived from the live document:
// 1. `customCss`: one rule per switched-off operation hides Scalar's `.show-api-client-button`
//    inside the element whose id ends in `/<METHOD><path>`, and the operation's entry in the
//    client's sidebar (`data-sidebar-id`, the same string). That id is the operation's deep link
//    (`#tag/orders/GET/store/orders`), which Scalar keeps stable because people share those
//    links, and docs-init.js pins it with `generateOperationSlug`. CSS applies to lazily
//    rendered and re-rendered operations alike, with no timing involved.
// 2. `customFetch`: Scalar's client sends every request through it, however it reached the
//    operation (sidebar, page search, send hotkey, edited address bar). It refuses requests whose
//    method and path match a switched-off operation (the path template under the document's
//    servers, resolved against the page as Scalar resolves them); Scalar shows the refusal as an
//    error toast and nothing leaves the browser. 1 is the presentation; 2 is the guarantee.
// 3. A plugin (`plugins`, its `extensions` entry for `x-hideTryItPanel`): Scalar renders it
//    inside each operation carrying the extension, a one-line notice saying why there is no
//    "Test Request" button.
// If an upgrade renames the button class or changes the id scheme, test/docs/docs.browser.test.ts
// fails: it asserts the button is on a neighbouring operation and not on the switched-off one,
// and that the client refuses to send the switched-off operation.
//
// Security: no inline script (the configuration travels in data-* attributes), so script-src is
// 'self'. style-src needs 'unsafe-inline': Scalar injects its stylesheet and `customCss` as
// <style> elements and renders style attributes. connect-src 'self' lets the try-it panel call
// the API, whose server URL is relative (`/v1`) and which Scalar resolves against the page.
import type { FastifyInstance } from 'fastify'
import { readFile } from 'node:fs/promises'
import { onceSucceeded, servePage, staticEntity, versionedAsset } from '../transport/static.ts'

export interface DocsOptions { specUrl: string; title?: string }

const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'"
].join('; ')

// Read and compressed on the first request for the page or an asset, not at start: the 4.35 MB
// bundle and its compressed copies (about 6.7 MB together) would otherwise sit in every process,
// read or not. The assets never change while the process runs, so every app built in this
// process (tests build many) shares one read and one compression.
const loadAssets = onceSucceeded(() => Promise.all([
  // The package's browser bundle, vendored (src/openapi/docs/vendor/README.md, scripts/vendor-scalar.ts).
  readFile(new URL('./docs/vendor/scalar-api-reference.js', import.meta.url))
    .then((bytes) => versionedAsset(bytes, 'scalar-api-reference', 'js', 'text/javascript; charset=utf-8')),
  readFile(new URL('./docs/docs-init.js', import.meta.url))
    .then((bytes) => versionedAsset(bytes, 'docs-init', 'js', 'text/javascript; charset=utf-8'))
]))

const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

function renderPage (title: string, specUrl: string, scripts: string[]): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<link rel="icon" href="data:,">
${scripts.map((src) => `<script defer src="${escapeHtml(src)}"></script>`).join('\n')}
</head>
<body>
<noscript>The API reference needs JavaScript. The OpenAPI document is at <a href="${escapeHtml(specUrl)}">${escapeHtml(specUrl)}</a>.</noscript>
<div id="petstore-docs" data-openapi-url="${escapeHtml(specUrl)}"></div>
</body>
</html>
`
}

export async function docsRoutes (app: FastifyInstance, opts: DocsOptions): Promise<void> {
  servePage(app, {
    path: '/docs',
    load: async (assetsPath) => {
      const assets = await loadAssets()
      // Order matters: the boot script uses window.Scalar, which the bundle defines.
      const html = renderPage(opts.title ?? 'API reference', opts.specUrl, assets.map((asset) => assetsPath + asset.name))
      return { page: await staticEntity(html, 'text/html; charset=utf-8'), assets }
    },
    pageHeaders: { 'content-security-policy': CONTENT_SECURITY_POLICY, 'referrer-policy': 'same-origin' }
  })
}
