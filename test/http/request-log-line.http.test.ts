// The common request line is built by hand (http/request-log.ts, docs/performance.md): it must be
// byte for byte what pino would write for the same fields, and fall back to pino whenever the
// logger is set up so that pino would write something else.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { pino } from 'pino'
import { loadConfig } from '../../src/config.ts'
import { RequestLog } from '../../src/http/request-log.ts'
import { createLogger } from '../../src/server.ts'

type Logger = Parameters<RequestLog['attach']>[0]
type Completed = Parameters<RequestLog['requestCompleted']>

function captured (
  make: (destination: { write (chunk: string): void }) => unknown
): { logger: Logger; chunks: string[] } {
  const chunks: string[] = []
  return { logger: make({ write: (chunk: string) => { chunks.push(chunk) } }) as Logger, chunks }
}

const clock = { now: () => 0 }
const completed = (url: string, keyId?: number): Completed => [
  null,
  // `raw`: an unmarked request (http/instance.ts marks the portal door's on it).
  { id: 'req-1', principal: keyId === undefined ? null : { keyId }, method: 'GET', url, failure: null, raw: {} } as
    unknown as Completed[1],
  { statusCode: 200, elapsedTime: 1.25 } as unknown as Completed[2]
]

// Fault caught: a hand-built line that drifts from pino's (a field, an escape, the order, the
// pid/hostname bindings, the line end) while every test that parses the line still passes.
test('the hand-built "request completed" line is exactly the line pino writes for the same fields, quotes and escapes included', () => {
  const frozenNow = Date.now
  Date.now = () => 1_795_000_000_000
  try {
    for (const [url, keyId] of [['/v1/pets/5', 7], ['/v1/pets?id=5&name=a"b\\c\u00e9\u0001', undefined], ['/v1/pets?x=' + 'y'.repeat(200), 3]] as const) {
      const fast = captured((d) => createLogger(loadConfig({ LOG_LEVEL: 'info' }), d))
      const log = new RequestLog({ clock })
      log.attach(fast.logger)
      const info = fast.logger.info.bind(fast.logger)
      let throughPino = 0
      const callInfo = info as (...a: unknown[]) => void
      fast.logger.info = ((...args: unknown[]) => { throughPino++; callInfo(...args) }) as typeof fast.logger.info
      log.requestCompleted(...completed(url, keyId))
      assert.equal(throughPino, 0, 'the common line does not go through pino')

      const reference = captured((d) => createLogger(loadConfig({ LOG_LEVEL: 'info' }), d))
      reference.logger.info({ reqId: 'req-1', keyId, method: 'GET', url, statusCode: 200, responseTime: 1.25 }, 'request completed')
      assert.equal(fast.chunks.join(''), reference.chunks.join(''))
    }
  } finally {
    Date.now = frozenNow
  }
})

// Fault caught: the hand-built line ignoring the level, or a logger set up differently (a mixin,
// a redaction of a field of the line) getting the hand-built line instead of pino's.
test('below info nothing is written; a logger with a mixin or a redacted line field goes through pino', () => {
  const quiet = captured((d) => createLogger(loadConfig({ LOG_LEVEL: 'warn' }), d))
  const log = new RequestLog({ clock })
  log.attach(quiet.logger)
  log.requestCompleted(...completed('/v1/pets/1', 1))
  assert.equal(quiet.chunks.join(''), '')

  for (const options of [{ mixin: () => ({ extra: 1 }) }, { redact: ['url'] }] as pino.LoggerOptions[]) {
    const other = captured((d) => pino(options, d))
    const viaPino = new RequestLog({ clock })
    viaPino.attach(other.logger)
    viaPino.requestCompleted(...completed('/v1/pets/1', 1))
    const line = JSON.parse(other.chunks.join('')) as Record<string, unknown>
    if ('mixin' in options) assert.equal(line.extra, 1)
    else assert.equal(line.url, '[Redacted]')
  }
})
