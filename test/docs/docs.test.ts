// The /docs routes without a browser: the page, its assets, their headers, and that they stay
// out of the OpenAPI document. test/docs/docs.browser.test.ts checks the rendered page.
import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { test } from 'node:test'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import swagger from '@fastify/swagger'
import Fastify from 'fastify'
import type { FastifyInstance } from 'fastify'
import { docsRoutes } from '../../src/openapi/docs.ts'
import { buildFixtureApp } from './fixture-app.ts'

const scalarBundle = new URL('../../src/openapi/docs/vendor/scalar-api-reference.js', import.meta.url)

async function fixtureApp (t: { after: (fn: () => Promise<unknown>) => void }): Promise<FastifyInstance> {
  const { app } = await buildFixtureApp()
  t.after(() => app.close())
  return app
}

/** The src/href of every <script> and <link> in the page. */
function assetUrls (html: string): string[] {
  return [...html.matchAll(/<(?:script|link)\b[^>]*?\s(?:src|href)="([^"]*)"/g)].map((match) => match[1] ?? '')
}

const scriptUrls = (html: string): string[] =>
  [...html.matchAll(/<script\b[^>]*?\ssrc="([^"]*)"/g)].map((match) => match[1] ?? '')

void test('GET /docs answers 200 text/html that loads only local scripts, under a Content-Security-Policy', async (t) => {
  const app = await fixtureApp(t)
  const response = await app.inject({ method: 'GET', url: '/docs' })

  assert.equal(response.statusCode, 200)
  assert.equal(response.headers['content-type'], 'text/html; charset=utf-8')
  assert.equal(response.headers['cache-control'], 'no-cache')
  const csp = String(response.headers['content-security-policy'])
  assert.match(csp, /default-src 'none'/)
  assert.match(csp, /script-src 'self'(;|$)/, 'scripts only from the API itself, none inline')
  assert.match(csp, /connect-src 'self'(;|$)/)

  const html = response.body
  assert.match(html, /<title>Petstore API reference<\/title>/)
  assert.match(html, /data-openapi-url="\/openapi\.json"/)
  assert.doesNotMatch(html, /<script(?![^>]*\ssrc=)[^>]*>/, 'no inline script')
  assert.doesNotMatch(html, /<(?:script|link|img)\b[^>]*\s(?:src|href)="(?:https?:)?\/\//i, 'no remote script, style or image')
  for (const url of assetUrls(html)) {
    assert.ok(url === 'data:,' || url.startsWith('/docs/assets/'), `${url} is served by the API`)
  }
  const scripts = scriptUrls(html)
  assert.equal(scripts.length, 2)
  assert.match(scripts[0] ?? '', /^\/docs\/assets\/scalar-api-reference\.[0-9a-f]{16}\.js$/, 'Scalar first: the boot script uses it')
  assert.match(scripts[1] ?? '', /^\/docs\/assets\/docs-init\.[0-9a-f]{16}\.js$/)
})

void test('GET /docs/assets/* answers 200 JavaScript with immutable cache headers, as brotli or gzip when accepted, and 304 to a current ETag', async (t) => {
  const app = await fixtureApp(t)
  const [scalarUrl = '', initUrl = ''] = scriptUrls((await app.inject({ method: 'GET', url: '/docs' })).body)
  const [scalarSource, initSource] = await Promise.all([
    readFile(scalarBundle),
    readFile(new URL('../../src/openapi/docs/docs-init.js', import.meta.url))
  ])

  for (const [url, source] of [[scalarUrl, scalarSource], [initUrl, initSource]] as const) {
    const plain = await app.inject({ method: 'GET', url, headers: { 'accept-encoding': 'identity' } })
    assert.equal(plain.statusCode, 200, url)
    assert.equal(plain.headers['content-type'], 'text/javascript; charset=utf-8', url)
    assert.equal(plain.headers['cache-control'], 'public, max-age=31536000, immutable', url)
    assert.equal(plain.headers['x-content-type-options'], 'nosniff', url)
    assert.equal(plain.headers.vary, 'accept-encoding', url)
    assert.equal(plain.headers['content-encoding'], undefined, url)
    assert.ok(plain.rawPayload.equals(source), `${url} is the file from disk`)
    const etag = String(plain.headers.etag)
    assert.match(etag, /^"[0-9a-f]{32}"$/)

    const br = await app.inject({ method: 'GET', url, headers: { 'accept-encoding': 'gzip, deflate, br' } })
    assert.equal(br.headers['content-encoding'], 'br', url)
    assert.equal(br.headers.etag, etag.replace(/"$/, '-br"'), 'each coding has its own strong tag')
    assert.ok(brotliDecompressSync(br.rawPayload).equals(source), `${url} in brotli is the file from disk`)

    const gzipped = await app.inject({ method: 'GET', url, headers: { 'accept-encoding': 'br;q=0.5, gzip' } })
    assert.equal(gzipped.statusCode, 200, url)
    assert.equal(gzipped.headers['content-encoding'], 'gzip', url)
    assert.ok(gunzipSync(gzipped.rawPayload).equals(source), `${url} gzipped is the file from disk`)

    // Revalidation: any coding's tag names the same bytes.
    for (const tag of [etag, String(br.headers.etag), `W/${String(gzipped.headers.etag)}`, `"other", ${etag}`]) {
      const notModified = await app.inject({ method: 'GET', url, headers: { 'accept-encoding': 'br', 'if-none-match': tag } })
      assert.equal(notModified.statusCode, 304, tag)
      assert.equal(notModified.body, '')
      assert.equal(notModified.headers.etag, br.headers.etag)
      assert.equal(notModified.headers['cache-control'], 'public, max-age=31536000, immutable')
    }
    assert.equal((await app.inject({ method: 'GET', url, headers: { 'if-none-match': '"other"' } })).statusCode, 200)
  }

  const refused = await app.inject({ method: 'GET', url: scalarUrl, headers: { 'accept-encoding': 'gzip;q=0, br;q=0' } })
  assert.equal(refused.headers['content-encoding'], undefined, 'q=0 means not acceptable')
  const star = await app.inject({ method: 'GET', url: scalarUrl, headers: { 'accept-encoding': '*' } })
  assert.equal(star.headers['content-encoding'], 'br')
})

void test('GET /docs answers 304 to its current ETag', async (t) => {
  const app = await fixtureApp(t)
  const page = await app.inject({ method: 'GET', url: '/docs' })
  const again = await app.inject({ method: 'GET', url: '/docs', headers: { 'if-none-match': String(page.headers.etag) } })
  assert.equal(again.statusCode, 304)
  assert.equal(again.headers['cache-control'], 'no-cache')
})

void test('GET /docs/assets/ answers 404 for a name it does not serve, including the unversioned bundle', async (t) => {
  const app = await fixtureApp(t)
  for (const url of ['/docs/assets/standalone.js', '/docs/assets/../../package.json', '/docs/assets/']) {
    const response = await app.inject({ method: 'GET', url })
    assert.equal(response.statusCode, 404, url)
  }
})

void test('HEAD /docs and HEAD on an asset answer 200 with headers and no body', async (t) => {
  const app = await fixtureApp(t)
  const page = await app.inject({ method: 'HEAD', url: '/docs' })
  assert.equal(page.statusCode, 200)
  assert.equal(page.headers['content-type'], 'text/html; charset=utf-8')
  assert.equal(page.body, '')

  const [scalarUrl = ''] = scriptUrls((await app.inject({ method: 'GET', url: '/docs' })).body)
  const asset = await app.inject({ method: 'HEAD', url: scalarUrl })
  assert.equal(asset.statusCode, 200)
  assert.equal(asset.headers['content-type'], 'text/javascript; charset=utf-8')
  assert.equal(asset.body, '')
})

void test('the docs routes stay out of the OpenAPI document', async (t) => {
  const app = Fastify()
  t.after(() => app.close())
  await app.register(swagger, { openapi: { openapi: '3.0.3', info: { title: 'test', version: '1.0.0' } } })
  await app.register(docsRoutes, { specUrl: '/openapi.json' })
  app.get('/v1/ping', async () => 'pong')
  await app.ready()
  assert.deepEqual(Object.keys(app.swagger().paths ?? {}), ['/v1/ping'])
})

void test('the page escapes its title and document URL, and follows the prefix it is registered under', async (t) => {
  const app = Fastify()
  t.after(() => app.close())
  await app.register(docsRoutes, { prefix: '/api', specUrl: '/api/openapi.json?x="1"&y=<2>', title: 'Pets & <Co>' })
  const response = await app.inject({ method: 'GET', url: '/api/docs' })
  assert.equal(response.statusCode, 200)
  assert.match(response.body, /<title>Pets &#38; &#60;Co&#62;<\/title>/)
  assert.match(response.body, /data-openapi-url="\/api\/openapi\.json\?x=&#34;1&#34;&#38;y=&#60;2&#62;"/)
  const scripts = scriptUrls(response.body)
  assert.equal(scripts.length, 2)
  for (const url of scripts) {
    assert.match(url, /^\/api\/docs\/assets\//)
    assert.equal((await app.inject({ method: 'GET', url })).statusCode, 200, url)
  }
})
