// A request that announces no body is not "dumped" by Node after its answer (transport/unread-body.ts,
// skipDumpOfBodiless): nothing is left on the wire to pull, and the dump cost a read 7 to 9% of its
// CPU. Over real sockets, pipelined on one connection: bodiless reads are answered without a dump;
// a bodiless request whose stream is read (an empty JSON body) still ends; a GET that sends a body
// (256 KiB) still has it pulled off the wire, or the connection would stall with the request after it.
import assert from 'node:assert/strict'
import { IncomingMessage } from 'node:http'
import { connect } from 'node:net'
import { test } from 'node:test'
import { startTestServer } from '../helpers/server.ts'

/** Sends `raw` on a new connection and returns what came back once `answers` status lines have (or 5 s passed). */
async function exchange (port: number, raw: string, answers: number): Promise<string> {
  return await new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let received = ''
    const finish = (): void => { clearTimeout(timer); socket.destroy(); resolve(received) }
    const timer = setTimeout(finish, 5000)
    socket.setEncoding('latin1')
    socket.on('data', (chunk: string) => {
      received += chunk
      if ((received.match(/HTTP\/1\.1 \d{3} /g) ?? []).length >= answers) setTimeout(finish, 200)
    })
    socket.on('error', reject)
    socket.write(raw)
  })
}

const statuses = (received: string): number[] => [...received.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]))

test('bodiless requests are answered without Node dumping them; bodies are still pulled off the wire', async (t) => {
  const { port, keys } = await startTestServer(t, {})
  // Node's own method, counted (an internal: the server calls it after an answer).
  const proto = IncomingMessage.prototype as unknown as { _dump: (this: IncomingMessage) => void }
  const dump = proto._dump
  let dumps = 0
  proto._dump = function (this: IncomingMessage) { dumps++; dump.call(this) }
  t.after(() => { proto._dump = dump })
  const head = (line: string, extra = ''): string => `${line} HTTP/1.1\r\nHost: x\r\nX-API-Key: ${keys.staff}\r\n${extra}`

  // Twenty reads on one connection, and a HEAD: each answered, none dumped.
  const reads = Array.from({ length: 20 }, () => head('GET /v1/pets/1') + '\r\n').join('') + head('HEAD /v1/pets?id=1') + '\r\n'
  const readAnswers = statuses(await exchange(port, reads, 21))
  assert.deepEqual(readAnswers, Array(21).fill(200))
  assert.equal(dumps, 0, 'no bodiless request dumped')

  // An empty body that is read (Content-Length: 0 with a JSON type): the stream still ends, and the
  // request is answered (a body is required: 400, after which the connection is closed).
  const empty = head('POST /v1/pets', 'Content-Type: application/json\r\nContent-Length: 0\r\n') + '\r\n'
  assert.deepEqual(statuses(await exchange(port, empty, 1)), [400])

  // A GET that sends a body nobody reads: Node still dumps it, and the next request on the
  // connection is the one that follows the body, not the body's bytes.
  dumps = 0
  const body = 'x'.repeat(256 * 1024)
  const withBody = head('GET /v1/pets/1', `Content-Type: text/plain\r\nContent-Length: ${body.length}\r\n`) + '\r\n' + body + head('GET /v1/pets/1') + '\r\n'
  const answers = statuses(await exchange(port, withBody, 2))
  assert.equal(answers.length, 2, `two answers on the connection: ${answers.join(', ')}`)
  assert.equal(answers[1], 200)
  assert.ok(dumps >= 1, 'the unread body was dumped')
})
