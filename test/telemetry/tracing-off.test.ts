// Tracing costs nothing when it is off (issue 35): without OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_TRACES_EXPORTER, a serving process loads no OpenTelemetry module: no SDK, instrumentation,
// exporter or @fastify/otel. The one exception is the API package (@opentelemetry/api), which
// prom-client requires for its exemplars whether we trace or not: a facade of no-op tracers until
// an SDK registers, which only telemetry/sdk.ts does. The same recorder sees the SDK load when
// tracing is on, so an empty list is not a blind recorder.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { cleanupStack, startServerProcess } from '../helpers/server.ts'
import { tempDir } from '../helpers/temp.ts'
import { tracingEnabled } from '../../src/telemetry/enabled.ts'
import { startOtlpReceiver } from './otlp-receiver.ts'

const RECORDER = new URL('./record-loads.ts', import.meta.url).pathname

async function modulesLoadedBy (t: Parameters<typeof cleanupStack>[0], env: Record<string, string>): Promise<string[]> {
  const cleanup = cleanupStack(t)
  const dir = tempDir(t)
  const file = join(dir, 'loads.json')
  const server = await startServerProcess(cleanup, {
    DATABASE_URL: `sqlite:${join(dir, 'p.db')}`,
    NODE_OPTIONS: `--import=${RECORDER}`,
    PETSTORE_TEST_LOADS_FILE: file,
    LOG_LEVEL: 'warn',
    ...env
  })
  assert.equal((await fetch(`${server.url}/v1/pets`)).status, 401)
  assert.equal(await server.stop(), 0)
  return (JSON.parse(readFileSync(file, 'utf8')) as string[]).filter((url) => !url.includes('/node_modules/@opentelemetry/api/'))
}

test('a server without OTEL_* settings loads no OpenTelemetry SDK, instrumentation or exporter (only prom-client\'s API facade); with an endpoint it loads them', { timeout: 60_000 }, async (t) => {
  assert.deepEqual(await modulesLoadedBy(t, {}), [])
  const receiver = await startOtlpReceiver(t)
  const on = await modulesLoadedBy(t, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })
  assert.ok(on.some((url) => url.includes('/@opentelemetry/sdk-node/')), on.join('\n'))
  assert.ok(on.some((url) => url.includes('/@fastify/otel/')))
})

test('tracing is on for an OTLP endpoint or the otlp traces exporter, and off for none or a disabled SDK', () => {
  assert.equal(tracingEnabled({}), false)
  assert.equal(tracingEnabled({ OTEL_EXPORTER_OTLP_ENDPOINT: '' }), false)
  assert.equal(tracingEnabled({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), true)
  assert.equal(tracingEnabled({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }), true)
  assert.equal(tracingEnabled({ OTEL_TRACES_EXPORTER: 'otlp' }), true)
  assert.equal(tracingEnabled({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), false)
  assert.equal(tracingEnabled({ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), false)
  assert.equal(tracingEnabled({ OTEL_METRICS_EXPORTER: 'otlp' }), false)
})
