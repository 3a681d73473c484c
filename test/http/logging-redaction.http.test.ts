// No key in any log line or answer (issue 30 item 4): a key used as an unknown query parameter's
// name or an unknown body field's name, a key percent-encoded five times in the URL, and a key in
// an error's message, through the production logger (pino, its options and serializers) writing
// to memory, and the app's real answers.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { test } from 'node:test'
import { loadConfig } from '../../src/config.ts'
import { createLogger } from '../../src/server.ts'
import { unknownKey } from '../access/key-reads.ts'
import { buildTestApp } from '../helpers/app.ts'

const KEY = 'psk_' + randomBytes(32).toString('base64url').slice(0, 43)
/** The key's random part: if any 12 characters of it show, the key leaked. */
const SECRET = KEY.slice(4, 16)

/** `text` decoded until nothing changes, as a reader of the log could. */
function fullyDecoded (text: string): string {
  let out = text
  for (;;) {
    const next = out.replace(/%([0-9A-Fa-f]{2})/g, (_m, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)))
    if (next === out) return out
    out = next
  }
}

/** The key with its `p` percent-encoded, then every `%` encoded again, `depth` times in all. */
function encoded (depth: number): string {
  let text = '%70' + KEY.slice(1)
  for (let i = 1; i < depth; i++) text = text.replaceAll('%', '%25')
  return text
}

function capturedLogger () {
  const chunks: string[] = []
  const logger = createLogger(loadConfig({ LOG_LEVEL: 'info' }), { write: (chunk: string) => { chunks.push(chunk) } })
  return { logger, text: () => chunks.join('') }
}

const leaks = (text: string): boolean => fullyDecoded(text).includes(SECRET) || /psk_[A-Za-z0-9_-]{8}/i.test(fullyDecoded(text))

test('a key as an unknown query parameter or body field name is neither in the 400 nor in its log line', async (t) => {
  const log = capturedLogger()
  const { call, keys } = await buildTestApp(t, { deps: { logger: log.logger } })
  const query = await call({ method: 'GET', url: `/v1/pets?${KEY}=1`, key: keys.customer })
  const doubly = await call({ method: 'GET', url: `/v1/pets?${encoded(2)}=1`, key: keys.customer })
  const body = await call({ method: 'POST', url: '/v1/categories', key: keys.staff, body: { name: 'Birds', [KEY]: 1 } })
  for (const res of [query, doubly, body]) {
    assert.equal(res.statusCode, 400, res.body)
    assert.equal(res.json().code, 'validation_failed')
    assert.match(res.body, /\[redacted\]/, 'the name is said to be there, redacted')
    assert.equal(leaks(res.body), false, res.body)
  }
  const lines = log.text().split('\n').filter((l) => l.includes('"reason"'))
  assert.equal(lines.length, 3, log.text())
  for (const line of lines) assert.match(line, /\[redacted\]/)
  assert.equal(leaks(log.text()), false, log.text())
})

test('a key percent-encoded five times in the URL is cut from the answer and the log line', async (t) => {
  const log = capturedLogger()
  const { call, keys } = await buildTestApp(t, { deps: { logger: log.logger } })
  const url = `/v1/nothing/${encoded(5)}`
  const res = await call({ method: 'GET', url, key: keys.customer })
  assert.equal(res.statusCode, 404)
  assert.equal(leaks(res.body), false, res.body)
  const search = await call({ method: 'GET', url: `/v1/pets?name=${encoded(5)}`, key: keys.customer })
  assert.equal(search.statusCode, 200)
  assert.equal(leaks(log.text()), false, log.text())
  assert.equal((log.text().match(/\[redacted\]/g) ?? []).length >= 3, true, log.text())
})

test('a key in an error\'s message (a store that quotes it) reaches neither the answer nor the log', async (t) => {
  const log = capturedLogger()
  const { call, stores } = await buildTestApp(t, { deps: { logger: log.logger } })
  stores.keys.findKeyByHash = async () => { throw new Error(`lookup of ${KEY} and ${encoded(3)} failed`) }
  // A checksummed key is read to be refused (an unknown legacy-form one is refused by its prefix, unread).
  const res = await call({ method: 'GET', url: '/v1/pets', key: unknownKey('q') })
  assert.equal(res.statusCode, 500)
  assert.equal(leaks(res.body), false, res.body)
  assert.match(log.text(), /lookup of \[redacted\] and \[redacted\] failed/, 'the message is logged, redacted')
  assert.equal(leaks(log.text()), false, log.text())
})
