// transport/header-block.ts writes the response head itself for the common answer: the head, and the
// state Node keeps for the connection, must be exactly what Node's own _storeHeader makes, and an
// answer it does not handle must go to Node (same head, same errors).
import assert from 'node:assert/strict'
import { IncomingMessage, ServerResponse } from 'node:http'
import { Socket } from 'node:net'
import { test } from 'node:test'
import { headBlocks, HeaderBlockResponse } from '../../src/transport/header-block.ts'

interface Setup {
  keepAlive?: boolean
  keepAliveTimeout?: number
  maxRequestsPerSocket?: number
  maxReached?: boolean
  sendDate?: boolean
  method?: string
}

function responses (setup: Setup): [ServerResponse, ServerResponse] {
  const make = (Class: typeof ServerResponse): ServerResponse => {
    const request = new IncomingMessage(new Socket())
    request.method = setup.method ?? 'GET'
    request.httpVersionMajor = 1
    request.httpVersionMinor = 1
    const response = new Class(request)
    // What Node's server sets on each response (parserOnIncoming).
    const r = response as unknown as Record<string, unknown>
    response.shouldKeepAlive = setup.keepAlive ?? true
    r._keepAliveTimeout = setup.keepAliveTimeout ?? 72_000
    r._maxRequestsPerSocket = setup.maxRequestsPerSocket
    if (setup.maxReached === true) r.maxRequestsOnConnectionReached = true
    if (setup.sendDate === false) response.sendDate = false
    return response
  }
  return [make(ServerResponse), make(HeaderBlockResponse as typeof ServerResponse)]
}

type Internals = Record<string, unknown>
const state = (r: ServerResponse): Record<string, unknown> => {
  const i = r as unknown as Internals
  return {
    header: i._header,
    headerSent: i._headerSent,
    last: i._last,
    keepAlive: r.shouldKeepAlive,
    chunked: i.chunkedEncoding,
    hasBody: i._hasBody,
    statusCode: r.statusCode
  }
}

const READ = {
  'request-id': 'f2d89c07-1bdd-4d95-a454-8a5b38223480',
  'x-content-type-options': 'nosniff',
  warning: '299 - "Deprecated: this operation stops working on 2027-05-21 (2027-05-21T00:00:00.000Z); use GET /v1/pets?id=5 instead"',
  'x-ratelimit-remaining': '999999999',
  vary: 'Origin',
  etag: '"1"',
  'content-type': 'application/json; charset=utf-8',
  'content-length': '63'
}

// [case, setup, status, headers, written here (true) or by Node (false)]
const CASES: [string, Setup, number, Record<string, unknown>, boolean][] = [
  ['a read, keep-alive with a timeout', {}, 200, READ, true],
  ['a read, a connection that closes', { keepAlive: false }, 200, READ, true],
  ['keep-alive without a timeout', { keepAliveTimeout: 0 }, 200, READ, true],
  ['keep-alive with a request cap', { maxRequestsPerSocket: 100 }, 200, READ, true],
  ['the last request of a capped connection', { maxRequestsPerSocket: 100, maxReached: true }, 200, READ, true],
  ['no Date', { sendDate: false }, 200, READ, true],
  ['HEAD', { method: 'HEAD' }, 200, READ, true],
  ['a number value', {}, 404, { ...READ, 'content-length': 12 }, true],
  ['204 with a length', {}, 204, { 'request-id': 'x', 'content-length': '0' }, true],
  ['mixed-case names', {}, 200, { 'Request-Id': 'x', 'Content-Length': '3' }, true],
  ['a value with Latin-1 text and a tab', {}, 200, { ...READ, link: '<\u00e9>;\trel="x"' }, true],
  ['no Content-Length (Node frames it)', {}, 200, { 'request-id': 'x', 'content-type': 'text/plain' }, false],
  ['Connection: close given', {}, 200, { ...READ, connection: 'close' }, false],
  ['Keep-Alive given', {}, 200, { ...READ, 'keep-alive': 'timeout=5' }, false],
  ['Transfer-Encoding given', {}, 200, { 'transfer-encoding': 'chunked', 'request-id': 'x' }, false],
  ['a Date given', {}, 200, { ...READ, date: 'Tue, 24 Nov 2026 06:59:54 GMT' }, false],
  ['a header given twice (array)', {}, 200, { ...READ, 'set-cookie': ['a=1', 'b=2'] }, false]
]

for (const [name, setup, status, headers, here] of CASES) {
  test(`the head Node would write: ${name}`, () => {
    const [node, ours] = responses(setup)
    node.writeHead(status, { ...headers } as never)
    const before = headBlocks.written
    ours.writeHead(status, { ...headers } as never)
    assert.equal(headBlocks.written - before, here ? 1 : 0, 'written by transport/header-block.ts')
    // Both made in the same second, barring a second boundary between the two lines above.
    const a = state(node)
    const b = state(ours)
    const noDate = (s: Record<string, unknown>): Record<string, unknown> =>
      ({ ...s, header: String(s.header).replace(/Date: [^\r]*\r\n/, 'Date: -\r\n') })
    assert.deepEqual(noDate(b), noDate(a))
    assert.match(String(b.header), /\r\n\r\n$/)
  })
}

test('a value or a name Node refuses is refused with Node\'s own error, each time it is given', () => {
  // Twice over: a refused value must not be remembered as valid for its name (values found valid are).
  for (const headers of [0, 1].flatMap(() => [{ 'request-id': 'a\r\nset-cookie: x=1', 'content-length': '1' }, { 'bad name': 'x', 'content-length': '1' }, { 'x-a': 'a\u0000', 'content-length': '1' }, { 'x-a': 'snow \u2603', 'content-length': '1' }])) {
    const [node, ours] = responses({})
    const code = (r: ServerResponse): string | undefined => {
      try {
        r.writeHead(200, { ...headers })
        return undefined
      } catch (error) {
        return (error as { code?: string }).code
      }
    }
    const expected = code(node)
    assert.notEqual(expected, undefined)
    assert.equal(code(ours), expected)
    assert.equal((ours as unknown as Internals)._header, null)
  }
})

test('headers set one by one (setHeader) take Node\'s path and come out the same', () => {
  const [node, ours] = responses({})
  for (const r of [node, ours]) {
    r.setHeader('content-length', '2')
    r.setHeader('x-a', 'b')
    r.writeHead(200, { 'request-id': 'y' })
  }
  assert.equal(
    String((ours as unknown as Internals)._header).replace(/Date: [^\r]*/, ''),
    String((node as unknown as Internals)._header).replace(/Date: [^\r]*/, '')
  )
})

test('heads of every size one after another, with and without a request cap, each as Node writes it', () => {
  // Faults caught: the Keep-Alive line of another cap (it is made once per setting); a value of
  // an earlier head tested with a later one; a head of very many headers cut short.
  const many = Object.fromEntries(Array.from({ length: 80 }, (_, i) => [`x-h${i}`, `v${i}`]))
  const sequence: Array<Record<string, unknown>> = [READ, { 'request-id': 'x', 'content-length': '3' }, { ...READ, ...many }, { 'content-length': 0 }, READ, { 'x-a': 'ok', 'content-length': '1' }]
  for (const [i, headers] of sequence.entries()) {
    const [node, ours] = responses(i % 2 === 0 ? {} : { maxRequestsPerSocket: 7 })
    node.writeHead(200, { ...headers } as never)
    ours.writeHead(200, { ...headers } as never)
    const text = (r: ServerResponse): string => String((r as unknown as Internals)._header).replace(/Date: [^\r]*/, 'Date: -')
    assert.equal(text(ours), text(node), `head ${i}`)
  }
  // A refused value after a long head of valid ones, then a valid head: refused, then written.
  const [node, ours] = responses({})
  assert.throws(() => ours.writeHead(200, { 'x-a': 'a\r\nb', 'content-length': '1' }))
  node.writeHead(200, { 'x-a': 'fine', 'content-length': '1' })
  const [, again] = responses({})
  again.writeHead(200, { 'x-a': 'fine', 'content-length': '1' })
  assert.equal(
    String((again as unknown as Internals)._header).replace(/Date: [^\r]*/, ''),
    String((node as unknown as Internals)._header).replace(/Date: [^\r]*/, '')
  )
})

test('the Date of a head is the second it is made in, also after a second ends', async () => {
  // Fault caught: the date made once and never forgotten (it is kept for its second only).
  const dateOf = (): string => {
    const [, ours] = responses({})
    ours.writeHead(200, { ...READ })
    return /Date: ([^\r]*)/.exec(String((ours as unknown as Internals)._header))?.[1] ?? ''
  }
  // The date is forgotten by a timer at the second's end, as Node's own utcDate does: on a loaded
  // machine that timer can run a little late, so a head may carry the second just ended, never
  // an older one. A date never forgotten is two seconds old by the third head.
  for (let i = 0; i < 3; i++) {
    const before = Math.floor(Date.now() / 1000) * 1000
    const date = Date.parse(dateOf())
    const after = Math.floor(Date.now() / 1000) * 1000
    assert.ok(date >= before - 1000 && date <= after, `${new Date(date).toUTCString()} within a second before ${new Date(before).toUTCString()}`)
    // Into the next second, with time for the timer that forgets the date to run.
    await new Promise((resolve) => setTimeout(resolve, 1000 - new Date().getMilliseconds() + 30))
  }
})
