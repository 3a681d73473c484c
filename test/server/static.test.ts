// The heavy static answers: /openapi.json and /openapi.yaml compressed and revalidated by ETag,
// the choice of coding, and a process that stays small until someone reads the docs (the docs
// assets themselves are tested in test/docs/docs.test.ts).
import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { test } from 'node:test'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import { openApiDocument } from '../../src/cli/openapi.ts'
import { chooseCoding } from '../../src/transport/static.ts'
import { buildTestApp } from '../helpers/app.ts'
import { tempDir } from '../helpers/temp.ts'
import { cleanupStack, startServerProcess } from '../scale/helpers.ts'

test('GET /openapi.json and /openapi.yaml answer brotli or gzip as accepted, no-cache with an ETag, and 304 to it', async (t) => {
  const { app } = await buildTestApp(t)
  const document = JSON.parse(await openApiDocument()) as unknown
  for (const [url, type] of [['/openapi.json', 'application/json; charset=utf-8'], ['/openapi.yaml', 'application/yaml; charset=utf-8']] as const) {
    const plain = await app.inject({ method: 'GET', url })
    assert.equal(plain.statusCode, 200)
    assert.equal(plain.headers['content-type'], type)
    assert.equal(plain.headers['content-encoding'], undefined)
    assert.equal(plain.headers['cache-control'], 'no-cache')
    assert.equal(plain.headers.vary, 'accept-encoding')
    const etag = String(plain.headers.etag)
    assert.match(etag, /^"[0-9a-f]{32}"$/)

    const br = await app.inject({ method: 'GET', url, headers: { 'accept-encoding': 'gzip, deflate, br, zstd' } })
    assert.equal(br.headers['content-encoding'], 'br')
    assert.ok(brotliDecompressSync(br.rawPayload).equals(plain.rawPayload))
    const gzipped = await app.inject({ method: 'GET', url, headers: { 'accept-encoding': 'gzip' } })
    assert.equal(gzipped.headers['content-encoding'], 'gzip')
    assert.ok(gunzipSync(gzipped.rawPayload).equals(plain.rawPayload))
    t.diagnostic(`${url}: ${plain.rawPayload.length} bytes, ${gzipped.rawPayload.length} gzipped, ${br.rawPayload.length} in brotli`)
    assert.ok(br.rawPayload.length * 10 < plain.rawPayload.length, 'compressed to under a tenth')

    const notModified = await app.inject({ method: 'GET', url, headers: { 'accept-encoding': 'br', 'if-none-match': String(br.headers.etag) } })
    assert.equal(notModified.statusCode, 304)
    assert.equal(notModified.body, '')
    assert.equal(notModified.headers.etag, br.headers.etag)
  }
  assert.deepEqual((await app.inject({ method: 'GET', url: '/openapi.json', headers: { 'accept-encoding': 'br' } })).headers['content-encoding'], 'br')
  assert.deepEqual(JSON.parse(brotliDecompressSync((await app.inject({ method: 'GET', url: '/openapi.json', headers: { 'accept-encoding': 'br' } })).rawPayload).toString()), document)
})

test('chooseCoding follows the q-values of Accept-Encoding, brotli on a tie, identity when nothing else is acceptable', () => {
  const cases: Array<[string | undefined, string]> = [
    [undefined, 'identity'],
    ['', 'identity'],
    ['identity', 'identity'],
    ['gzip', 'gzip'],
    ['br', 'br'],
    ['gzip, br', 'br'],
    ['br;q=0.5, gzip', 'gzip'],
    ['br;q=0, gzip;q=0', 'identity'],
    ['*', 'br'],
    ['*;q=0.1, gzip;q=0.5', 'gzip'],
    ['deflate, zstd', 'identity'],
    ['GZIP;Q=1', 'gzip'],
    ['gzip;q=abc', 'identity']
  ]
  for (const [header, coding] of cases) assert.equal(chooseCoding(header), coding, String(header))
})

test('the docs assets are read and compressed on the first request for the page, not when the app is built', async (t) => {
  const { app } = await buildTestApp(t)
  const before = process.memoryUsage().arrayBuffers
  assert.ok(before < 4 * 2 ** 20, `${(before / 2 ** 20).toFixed(1)} MiB of buffers before the docs were asked for: the 4.35 MB bundle is not among them`)
  assert.equal((await app.inject({ method: 'GET', url: '/docs' })).statusCode, 200)
  const after = process.memoryUsage().arrayBuffers
  t.diagnostic(`buffers: ${(before / 2 ** 20).toFixed(1)} MiB before GET /docs, ${(after / 2 ** 20).toFixed(1)} MiB after`)
  assert.ok(after - before > 4 * 2 ** 20, 'the bundle and its compressed copies are held from the first request on')
})

/** Resident memory of a process, in bytes (Linux). */
async function rss (pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(status)
  assert.ok(match !== null, 'no VmRSS in /proc/PID/status')
  return Number(match[1]) * 1024
}

// A measurement, reported rather than asserted: resident memory depends on the machine, the
// Node build and the garbage collector's mood, and the bound the figure is compared with
// (100 MiB) is not met today for reasons outside the docs (see docs/reliability.md, "Memory").
test('resident memory of a started server, and after it served the docs bundle', { timeout: 30_000, skip: process.platform !== 'linux' && 'reads /proc' }, async (t) => {
  const cleanup = cleanupStack(t)
  const dir = tempDir(t, 'petstore-rss-')
  const server = await startServerProcess(cleanup, { DATABASE_URL: `sqlite:${join(dir, 'p.db')}` })
  const pid = server.child.pid!
  const atStart = await rss(pid)
  const page = await (await fetch(`${server.url}/docs`)).text()
  const bundle = /src="(\/docs\/assets\/scalar-api-reference\.[0-9a-f]{16}\.js)"/.exec(page)?.[1]
  assert.ok(bundle !== undefined)
  const served = await fetch(server.url + bundle, { headers: { 'accept-encoding': 'br' } })
  assert.equal(served.status, 200)
  await served.arrayBuffer()
  const afterDocs = await rss(pid)
  t.diagnostic(`RSS after start ${(atStart / 2 ** 20).toFixed(1)} MiB, after serving the docs bundle ${(afterDocs / 2 ** 20).toFixed(1)} MiB`)
})
