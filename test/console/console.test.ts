// GET /console and its assets over HTTP (issue 23 item 2): versioned asset names, compression,
// the docs assets' caching, the strict Content-Security-Policy on every console response, and
// nothing the page loads from another host.
import assert from 'node:assert/strict'
import { brotliDecompressSync } from 'node:zlib'
import { test } from 'node:test'
import { buildTestApp } from '../helpers/app.ts'

test('/console names its assets by content, serves them compressed and immutable, with a strict CSP', async (t) => {
  // Catches: an unversioned or stale asset name, a missing or weakened CSP (unsafe-inline,
  // unsafe-eval, another host), caching the page itself, an asset sent uncompressed.
  const { app } = await buildTestApp(t)
  const page = await app.inject({ method: 'GET', url: '/console', headers: { 'accept-encoding': 'br, gzip' } })
  assert.equal(page.statusCode, 200)
  assert.equal(page.headers['content-encoding'], 'br')
  assert.equal(page.headers['cache-control'], 'no-cache')
  const csp = String(page.headers['content-security-policy'])
  assert.match(csp, /default-src 'none'/)
  assert.match(csp, /script-src 'self'(;|$)/)
  assert.match(csp, /style-src 'self'(;|$)/)
  assert.match(csp, /connect-src 'self'(;|$)/)
  assert.match(csp, /frame-ancestors 'none'/)
  assert.doesNotMatch(csp, /unsafe|https?:|\*/)
  const html = brotliDecompressSync(page.rawPayload).toString()
  const assets = [...html.matchAll(/(?:src|href)="(\/console\/assets\/[^"]+)"/g)].map((m) => m[1]!)
  assert.equal(assets.length, 4, html)
  assert.doesNotMatch(html, /<script>|<style|\sstyle=|\son[a-z]+=/i, 'no inline script, style or handler')
  assert.doesNotMatch(html, /https?:\/\//, 'nothing from another host')

  for (const url of assets) {
    assert.match(url, /^\/console\/assets\/(console|shared)\.[0-9a-f]{16}\.(js|css)$/)
    const asset = await app.inject({ method: 'GET', url, headers: { 'accept-encoding': 'gzip' } })
    assert.equal(asset.statusCode, 200, url)
    assert.equal(asset.headers['content-encoding'], 'gzip')
    assert.equal(asset.headers['cache-control'], 'public, max-age=31536000, immutable')
    assert.equal(asset.headers['content-security-policy'], csp)
    const again = await app.inject({ method: 'GET', url, headers: { 'accept-encoding': 'gzip', 'if-none-match': String(asset.headers.etag) } })
    assert.equal(again.statusCode, 304)
  }
  for (const url of assets.filter((a) => a.endsWith('.js'))) {
    const js = await app.inject({ method: 'GET', url })
    assert.match(String(js.headers['content-type']), /^text\/javascript/)
    assert.doesNotMatch(js.body, /\.innerHTML|\.outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|localStorage\.|document\.cookie/, 'text only, the key in sessionStorage only')
    assert.doesNotMatch(js.body, /https?:\/\/(?!www\.w3\.org\/2000\/svg)/, 'no other host')
  }

  assert.equal((await app.inject({ method: 'GET', url: '/console/assets/console.0000000000000000.js' })).statusCode, 404)
})
