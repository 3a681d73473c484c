// DurationHistogram (src/ops/metrics.ts): http_request_duration_seconds counted in plain numbers per
// series instead of prom-client's observe() with its label hash per request. Its exposition must
// be exactly what prom-client's own Histogram gives for the same observations, so a dashboard or
// an alert cannot tell the two apart.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Histogram, Registry } from 'prom-client'
import { DurationHistogram, observeIn } from '../../src/ops/metrics.ts'

const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
const HELP = 'Time from receiving a request to the end of its response, by operation and method.'

/** The same observations in prom-client's Histogram and in ours, each in a registry of its own. */
function both (observations: [{ operation: string; method: string }, number][]) {
  const theirs = new Registry()
  const reference = new Histogram({
    name: 'http_request_duration_seconds',
    help: HELP,
    labelNames: ['operation', 'method'] as const,
    buckets: BUCKETS,
    registers: [theirs]
  })
  const ours = new Registry()
  const histogram = new DurationHistogram({ name: 'http_request_duration_seconds', help: HELP, buckets: BUCKETS, registers: [ours] })
  const cells = new Map<string, ReturnType<DurationHistogram['cell']>>()
  for (const [labels, seconds] of observations) {
    reference.observe(labels, seconds)
    const key = `${labels.operation} ${labels.method}`
    let cell = cells.get(key)
    if (cell === undefined) cells.set(key, cell = histogram.cell(Object.freeze({ ...labels })))
    observeIn(cell, seconds)
  }
  return { theirs, ours, reference, histogram }
}

const getPet = { operation: 'getPet', method: 'GET' }
const placeOrder = { operation: 'placeOrder', method: 'POST' }

test('the exposition is byte for byte prom-client\'s: every bucket edge, a value on a bound, past the last bound, zero, two series', async () => {
  const { theirs, ours } = both([
    [getPet, 0], [getPet, 0.001], [getPet, 0.0010001], [getPet, 0.003], [getPet, 0.003],
    [getPet, 10], [getPet, 10.5], [getPet, 42],
    [placeOrder, 0.0004], [placeOrder, 0.25], [placeOrder, 0.2500001], [placeOrder, 2.5]
  ])
  const text = await ours.metrics()
  assert.equal(text, await theirs.metrics())
  // Not vacuous: the text has both series, with the counts they were given.
  assert.match(text, /^http_request_duration_seconds_count\{operation="getPet",method="GET"\} 8$/m)
  assert.match(text, /^http_request_duration_seconds_bucket\{le="0.001",operation="getPet",method="GET"\} 2$/m)
  assert.match(text, /^http_request_duration_seconds_bucket\{le="10",operation="getPet",method="GET"\} 6$/m)
  assert.match(text, /^http_request_duration_seconds_bucket\{le="\+Inf",operation="getPet",method="GET"\} 8$/m)
  assert.match(text, /^http_request_duration_seconds_bucket\{le="0.25",operation="placeOrder",method="POST"\} 2$/m)
  assert.match(text, /^http_request_duration_seconds_count\{operation="placeOrder",method="POST"\} 4$/m)
  assert.match(text, /^http_request_duration_seconds_sum\{operation="placeOrder",method="POST"\} 3\.000400\d*$/m)
})

test('get() gives prom-client\'s values, labels merged; a series with no observation is absent, as prom-client never made it', async () => {
  const { reference, histogram } = both([[getPet, 0.002], [getPet, 0.7], [placeOrder, 0.02]])
  histogram.cell(Object.freeze({ operation: 'listPets', method: 'GET' }))
  assert.deepEqual(
    (await histogram.get()).values.map(({ labels, value, metricName }) => ({ labels, value, metricName })),
    (await reference.get()).values.map(({ labels, value, metricName }) => ({ labels, value, metricName }))
  )
})

test('reset() empties every series, which then counts again from zero (registry.resetMetrics)', async () => {
  const registry = new Registry()
  const histogram = new DurationHistogram({ name: 'http_request_duration_seconds', help: HELP, buckets: BUCKETS, registers: [registry] })
  const cell = histogram.cell(Object.freeze({ ...getPet }))
  observeIn(cell, 0.002)
  observeIn(cell, 3)
  registry.resetMetrics()
  assert.doesNotMatch(await registry.metrics(), /_count/)
  observeIn(cell, 0.004)
  const { theirs } = both([[getPet, 0.004]])
  assert.equal(await registry.metrics(), await theirs.metrics())
})
