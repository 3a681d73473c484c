// A one-second smoke run of `npm run bench`, so the harness cannot rot: it starts the servers,
// seeds, drives each kind of load (a random pet per request, a POST, the mixed run with its
// per-request timing), parses the generator's numbers and writes the table; then the autocannon
// fallback on its own. It asserts that all of that happened, never how fast: speed is measured
// by `npm run bench`, not tested.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { test } from 'node:test'
import { promisify } from 'node:util'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { LATENCY_GRID, openGenerator, type Load, type Slice } from '../../bench/load.ts'
import { hasCommand } from '../../bench/processes.ts'
import type { Document, Row } from '../../bench/report.ts'
import { serviceGate } from '../helpers/services.ts'
import { tempDir } from '../helpers/temp.ts'

const RUN = new URL('../../bench/run.ts', import.meta.url).pathname
// A second of warm-up: a server just started (JIT, first queries) could otherwise answer nothing
// within a one-second round on a loaded machine.
// The reference check runs (1 s of plain wrk at each end) with a tolerance no loaded machine can
// miss: this test checks that it ran and was reported, not the machine's steadiness.
const TINY = ['--rounds', '1', '--slice', '1', '--mixed-slice', '1', '--warmup', '1', '--reference', '1', '--tolerance', '1000', '--pets', '50', '--redis', 'off', '--postgres', 'off', '--micro', '0']

async function bench (
  t: { after (fn: () => Promise<void>): void },
  args: string[]
): Promise<{ stdout: string; doc: Document; markdown: string }> {
  const out = tempDir(t, 'petstore-bench-smoke-')
  const { stdout } = await promisify(execFile)(process.execPath, [RUN, ...TINY, '--out', out, ...args], { timeout: 190_000 })
  const doc = JSON.parse(await readFile(path.join(out, 'latest.json'), 'utf8')) as Document
  return { stdout, doc, markdown: await readFile(path.join(out, 'latest.md'), 'utf8') }
}

function assertMeasured (row: Row | undefined, title: string): void {
  assert.ok(row, `no row for ${title}`)
  assert.equal(row.status, 'ok', `${title}: ${row.reason ?? ''}`)
  for (const figure of [row.reqPerSec, row.p50Ms, row.p99Ms, row.ratio]) {
    assert.ok(typeof figure === 'number' && Number.isFinite(figure) && figure > 0, `${title}: ${JSON.stringify(row)}`)
  }
  assert.ok(row.requests > 0)
}

// wrk is what the benchmark is meant to run on; without it the run falls back to autocannon and
// says so, which this test then checks instead. Under CI a missing wrk fails (the services rule).
const wrk = serviceGate(hasCommand('wrk') ? null : 'wrk is not installed (Debian: apt-get install wrk)')

// The webhooks row with a dispatcher that polls every 10 ms and keeps 64 attempts in flight per
// endpoint: with the defaults (250 ms, 4) one endpoint takes at most 16 deliveries a second, and a
// second of orders would take minutes to deliver (docs/performance.md, "Webhooks").
const WEBHOOKS = ['--server-env', 'WEBHOOK_POLL_MS=10,WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT=64', '--drain', '60']

test('npm run bench, one second per slice: the reference, a random-pet read, orders, the mixed run and orders with a webhook are measured, tabled and saved', { timeout: 200_000 }, async (t) => {
  wrk.check()
  const { stdout, doc, markdown } = await bench(t, ['--only', 'get,orders,keyed,mixed,webhooks', ...WEBHOOKS])
  assert.equal(doc.ok, true, doc.failures.join('\n'))
  assert.match(doc.generator, wrk.skip === false ? /^wrk/ : /^autocannon in a child process \(wrk is not installed/)
  assert.deepEqual(doc.rows.map((r) => [r.setup, r.scenario, r.status]), [
    ['bare', 'bare', 'ok'],
    ['sqlite', 'get', 'ok'],
    ['sqlite', 'orders', 'ok'],
    ['sqlite', 'keyed', 'ok'],
    ['sqlite', 'mixed', 'ok'],
    ['sqlite', 'webhooks', 'ok'],
    ['postgres', 'all', 'skipped'],
    ['redis', 'all', 'skipped']
  ])
  for (const row of doc.rows.filter((r) => r.status === 'ok')) assertMeasured(row, row.title)
  const mixed = doc.rows.find((r) => r.scenario === 'mixed')!
  assert.ok(
    mixed.mixed !== undefined && mixed.mixed.ordersPerSec > 0 && mixed.mixed.readsPerSec > 0,
    JSON.stringify(mixed.mixed)
  )
  assert.deepEqual(doc.rows.map((r) => r.target), [null, '>= 0.5x (moonshot 0.6x), p99 <= 2.5x bare\'s', '>= 0.2x', null, 'reads p99 < 10 ms, every round, reads p99 <= 4x bare\'s', '>= 0.2x, every event delivered', null, null])
  // The keyed orders: beside the unkeyed ones, each order taken from the stock (none a replay).
  assert.match(doc.rows.find((r) => r.scenario === 'keyed')!.title, /^POST \/v1\/store\/orders, a new Idempotency-Key each \([\d.]+ CPU µs\/req against the unkeyed orders' [\d.]+, [\d.]+x their ratio to bare\)$/)
  // Each measured row's p99 beside the bare server's p99 of the same rounds.
  for (const row of doc.rows.filter((r) => r.status === 'ok' && r.scenario !== 'bare')) {
    assert.ok(
      typeof row.bareP99Ms === 'number' && row.bareP99Ms > 0 && row.p99Ratio === row.p99Ms! / row.bareP99Ms,
      `${row.title}: ${row.bareP99Ms} ${row.p99Ratio}`
    )
  }
  // Every order placed while the endpoint existed reached the receiver as an order.created.
  const hooked = doc.rows.find((r) => r.scenario === 'webhooks')!
  assert.ok(hooked.webhook !== undefined && hooked.webhook.orders > 0, JSON.stringify(hooked.webhook))
  assert.ok(
    hooked.webhook.delivered >= hooked.webhook.orders && hooked.webhook.drainSeconds !== null,
    JSON.stringify(hooked.webhook)
  )
  assert.match(stdout, /SQLite, POST \/v1\/store\/orders, one webhook on order\.\*: [\d,]+ orders\/s, .*order\.created all delivered/)
  // The server's CPU time per request, and the mixed run's rounds with the event loop and GC.
  for (const row of doc.rows.filter((r) => r.status === 'ok')) {
    assert.ok(typeof row.cpuUsPerReq === 'number' && row.cpuUsPerReq > 0, `${row.title}: no CPU time`)
  }
  assert.ok(
    mixed.roundStats?.length === 1 && typeof mixed.roundStats[0]!.loopMaxMs === 'number',
    JSON.stringify(mixed.roundStats)
  )
  // Each row's progress line names its target.
  assert.match(stdout, /SQLite, GET \/v1\/pets\/\{id\}: .* \([\d.]+x bare's [\d.]+ ms\), .*; target >= 0\.5x \(moonshot 0\.6x\), p99 <= 2\.5x bare's: (met|MISSED)/)
  // The reference check: plain wrk (no script) and the bench's load ran side by side at both ends
  // and were compared.
  if (wrk.skip === false) {
    assert.ok(
      doc.reference !== null && doc.reference.pairs.map((p) => p.when).join() === 'start,end'
      && doc.reference.pairs.every((p) => p.plain.reqPerSec > 0 && p.benchReqPerSec > 0),
      JSON.stringify(doc.reference)
    )
    assert.match(doc.reference.pairs[0]!.plain.command, /wrk -t1 -c50 -d1s --latency$/)
    assert.match(stdout, /Reference check, the bench's wrk script against plain wrk \(no script\) on bare node:http, one right after the other: at the start, the bench's load [\d,]+ req\/s against plain wrk's [\d,]+/)
  }
  assert.equal(doc.memory.length, 1)
  assert.ok(doc.memory[0]!.startMiB! > 0 && doc.memory[0]!.afterMiB! > 0)
  // The table, on stdout and in latest.md.
  assert.match(stdout, /scenario\s+req\/s\s+p50 ms\s+p99 ms\s+bare p99 ms\s+p99 \/ bare\s+ratio to bare/)
  assert.match(markdown, /\| setup \| scenario \| req\/s \| p50 ms \| p99 ms \| bare p99 ms \| p99 \/ bare \| ratio to bare \|/)
  assert.match(markdown, /\| SQLite \| POST \/v1\/store\/orders \| [\d,]+ \|/)
})

test('npm run bench -- --peers: json-server and the afternoon app in the same rounds as our reads and orders, each with our ratio to it; the refusal at the cap beside the orders; the request log on vs off', { timeout: 200_000 }, async (t) => {
  wrk.check()
  const { stdout, doc } = await bench(t, ['--only', 'get,orders,refused,log', '--peers'])
  assert.equal(doc.ok, true, doc.failures.join('\n'))
  assert.deepEqual(doc.rows.map((r) => [r.setup, r.scenario, r.status]), [
    ['bare', 'bare', 'ok'],
    ['sqlite', 'get', 'ok'],
    ['peer-afternoon', 'get', 'ok'],
    ['peer-json-server', 'get', 'ok'],
    ['sqlite', 'orders', 'ok'],
    ['peer-afternoon', 'orders', 'ok'],
    ['peer-json-server', 'orders', 'ok'],
    ['sqlite', 'log', 'ok'],
    ['sqlite', 'refused', 'ok'],
    ['postgres', 'all', 'skipped'],
    ['redis', 'all', 'skipped']
  ])
  for (const row of doc.rows.filter((r) => r.status === 'ok')) assertMeasured(row, row.title)
  // Same rounds: as many slices of each peer as of ours, and a ratio to it from each round.
  for (const peer of doc.rows.filter((r) => r.setup.startsWith('peer-'))) {
    const ours = doc.rows.find((r) => r.setup === 'sqlite' && r.scenario === peer.scenario)!
    assert.equal(peer.roundStats?.length, ours.roundStats?.length)
    assert.ok(peer.versus !== undefined, peer.title)
    assert.ok(peer.versus.ratio > 0 && peer.versus.ours === ours.title, JSON.stringify(peer.versus))
    assert.ok(peer.versus.range[0] <= peer.versus.ratio && peer.versus.ratio <= peer.versus.range[1])
    assert.ok((peer.versus.cpuRatio ?? 0) > 0)
  }
  assert.deepEqual(doc.rows.filter((r) => r.setup.startsWith('peer-')).map((r) => r.target),
    ['ours >= 0.9x its req/s', null, 'ours >= 1x its req/s', null])
  const refused = doc.rows.find((r) => r.scenario === 'refused')!
  assert.match(refused.target ?? '', /^CPU µs\/req <= the placed orders' \([\d.]+\)$/)
  // The request log's row: both servers measured (CPU of each), the difference as a share of the
  // log-on server's, its target and a verdict.
  const log = doc.rows.find((r) => r.scenario === 'log')!
  assert.ok(log.logCost !== undefined, JSON.stringify(log))
  assert.ok(log.logCost.onUs > 0 && log.logCost.offUs > 0 && log.logCost.offReqPerSec > 0, JSON.stringify(log.logCost))
  assert.ok(Math.abs(log.logCost.pct - (log.logCost.onUs - log.logCost.offUs) / log.logCost.onUs * 100) < 1e-9)
  // The median of its rounds (twice a row's), within their range.
  const { median, range } = log.logCost
  assert.ok(median >= range[0] && median <= range[1], JSON.stringify(log.logCost))
  assert.equal(log.target, 'log <= 5% of the read\'s CPU µs/req')
  assert.equal(log.met, log.logCost.pct <= 5)
  assert.match(stdout, /GET \/v1\/pets\/\{id\}, request log on vs off: .*log -?[\d.]+% of the read's CPU, side by side: [\d.]+ µs\/req on, [\d.]+ off/)
  assert.match(stdout, /peer: json-server 0\.17\.4, GET a pet by id: .*ours [\d.]+x its req\/s in the same rounds/)
})

test('the autocannon fallback: a static GET, a POST, random paths and the mixed run, each from its own process, parsed into counts and latencies', { timeout: 60_000 }, async (t) => {
  // A local server that answers 201 to POST and 200 to GET, and counts what it saw.
  const seen = { get: 0, post: 0 }
  const server = createServer((request, response) => {
    request.resume()
    request.on('end', () => {
      if (request.method === 'POST') seen.post++
      else seen.get++
      const status = request.url === '/refuse' ? 409 : request.method === 'POST' ? 201 : 200
      response.writeHead(status, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => new Promise<void>((resolve) => { server.close(() => resolve()); server.closeAllConnections() }))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const generator = await openGenerator('autocannon', null)
  assert.match(generator.describe, /^autocannon in a child process \(asked for/)
  const headers = { 'x-api-key': 'k' }
  const order = { path: '/orders', body: '{"petId":1,"quantity":1}' }
  const slices: Slice[] = []
  const loads: Load[] = [
    { kind: 'static', method: 'GET', path: '/x', headers },
    { kind: 'static', method: 'POST', path: order.path, body: order.body, headers },
    { kind: 'paths', paths: ['/a', '/b'], headers },
    { kind: 'mixed', paths: ['/a', '/b'], orderers: 1, order, headers },
    // The refusal row's load: a 409 is what it expects, so not a status error.
    { kind: 'static', method: 'POST', path: '/refuse', body: order.body, headers, expectStatus: 409 }
  ]
  // One after the other: they share this process's server.
  for (const load of loads) slices.push(await generator.run(base, load, 2, 1))
  for (const slice of slices) {
    assert.ok(slice.requests > 0 && slice.seconds > 0, JSON.stringify(slice))
    assert.deepEqual(slice.errors, { connect: 0, read: 0, write: 0, status: 0, timeout: 0 })
    assert.equal(slice.latencyUs.length, LATENCY_GRID.length)
    assert.ok(slice.latencyUs.every((v, i) => v > 0 && v >= (slice.latencyUs[i - 1] ?? 0)), 'the grid rises')
  }
  const mixed = slices[3]!
  assert.ok(mixed.reads !== undefined && mixed.orders !== undefined)
  assert.equal(mixed.reads.count + mixed.orders.count, mixed.requests)
  // One connection orders, the other reads.
  assert.ok(mixed.reads.count > 0 && mixed.orders.count > 0, `${mixed.reads.count} reads, ${mixed.orders.count} orders`)
  assert.equal(mixed.reads.bad + mixed.orders.bad, 0)
  assert.ok(seen.post > 0 && seen.get > 0)
})

test('the keyed orders\' load sends an Idempotency-Key of its own with every request, new in every run, from wrk and from autocannon', { timeout: 60_000 }, async (t) => {
  // A server that answers 201 and keeps every key it is sent.
  const keys: (string | undefined)[] = []
  const server = createServer((request, response) => {
    keys.push(request.headers['idempotency-key'] as string | undefined)
    request.resume()
    request.on('end', () => { response.writeHead(201, { 'content-type': 'application/json' }).end('{}') })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => new Promise<void>((resolve) => { server.close(() => resolve()); server.closeAllConnections() }))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const load: Load = { kind: 'static', method: 'POST', path: '/orders', body: '{"petId":1,"quantity":1}', headers: { 'x-api-key': 'k' }, freshIdempotencyKeys: true }
  for (const name of [...(hasCommand('wrk') ? ['wrk' as const] : []), 'autocannon' as const]) {
    const generator = await openGenerator(name, null)
    keys.length = 0
    const first = await generator.run(base, load, 4, 1)
    const firstKeys = keys.splice(0)
    const second = await generator.run(base, load, 4, 1)
    assert.ok(first.requests > 0 && second.requests > 0)
    assert.equal(firstKeys.length >= first.requests && keys.length >= second.requests, true, name)
    assert.ok([...firstKeys, ...keys].every((k) => typeof k === 'string' && /^bench-[0-9a-f-]+$/.test(k)), `${name}: ${firstKeys.slice(0, 3).join()}`)
    // No key twice, within a run or across two (each round is a run of the generator).
    assert.equal(new Set([...firstKeys, ...keys]).size, firstKeys.length + keys.length, `${name}: a key was sent twice`)
  }
})
