// SIGTERM drains a real server process (docs/product.md sections 8 and 9): it stops accepting,
// answers every request in flight (with `Connection: close`), closes idle keep-alive
// connections, and exits 0 within the grace period; past it, connections still busy are cut.
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { Agent, request } from 'node:http'
import { connect } from 'node:net'
import { join } from 'node:path'
import { test } from 'node:test'
import { tempDir } from '../helpers/temp.ts'
import { call, cleanupStack, createKey, startServerProcess, type ServerProcess } from '../scale/helpers.ts'

interface Outcome { status: number; connection: string | undefined; afterSigterm: boolean }

/** One POST on the agent's connection: the answer, or the transport error (which the test counts as lost). */
function postOrder (
  url: string,
  agent: Agent,
  key: string,
  petId: number
): Promise<{ status: number; connection: string | undefined }> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ petId, quantity: 1 })
    const req = request(`${url}/v1/store/orders`, {
      method: 'POST',
      agent,
      headers: { 'x-api-key': key, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }
    }, (res) => {
      res.resume()
      res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(body)
  })
}

async function sampleServer (
  t: Parameters<typeof cleanupStack>[0],
  env: Record<string, string> = {}
): Promise<{ server: ServerProcess; customer: string; petId: number; env: Record<string, string> }> {
  const cleanup = cleanupStack(t)
  const dir = tempDir(t, 'petstore-drain-')
  const dbEnv = { DATABASE_URL: `sqlite:${join(dir, 'p.db')}` }
  const quotas = { perMinute: 1_000_000, perDay: 1_000_000 }
  const staff = await createKey(dbEnv, 'staff', 'enterprise', quotas)
  const customer = await createKey(dbEnv, 'customer', 'enterprise', quotas)
  const server = await startServerProcess(cleanup, { ...dbEnv, ...env })
  const category = await call(server.url, '/v1/categories', { method: 'POST', key: staff.key, body: { name: 'Dogs' } })
  const pet = await call(server.url, '/v1/pets', { method: 'POST', key: staff.key, body: { name: 'Rex', categoryId: category.body.id } })
  const petId = pet.body.id as number
  assert.equal((await call(server.url, `/v1/store/inventory/${petId}`, { method: 'PUT', key: staff.key, body: { quantity: 100_000 } })).status, 200)
  return { server, customer: customer.key, petId, env: dbEnv }
}

test('SIGTERM: orders posted on keep-alive connections through the stop all get an answer, those in flight with Connection: close; idle connections are closed; exit 0', { timeout: 30_000 }, async (t) => {
  const { server, customer, petId } = await sampleServer(t)
  const exited = once(server.child, 'exit') as Promise<[number | null, string | null]>

  // A request in flight for sure: its head and half its body are sent before the stop, the rest after.
  const body = JSON.stringify({ petId, quantity: 1 })
  const port = Number(new URL(server.url).port)
  const slow = connect(port, '127.0.0.1')
  await once(slow, 'connect')
  slow.write(`POST /v1/store/orders HTTP/1.1\r\nHost: localhost\r\nX-API-Key: ${customer}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`)
  const slowAnswer = new Promise<string>((resolve) => {
    let text = ''
    slow.on('data', (chunk: Buffer) => { text += chunk.toString() })
    slow.on('close', () => resolve(text))
    slow.on('error', () => {})
  })

  // An idle keep-alive connection: one answer, then nothing.
  const idleAgent = new Agent({ keepAlive: true, maxSockets: 1 })
  assert.equal((await postOrder(server.url, idleAgent, customer, petId)).status, 201)
  const [idleSocket] = Object.values(idleAgent.freeSockets).flat()
  assert.ok(idleSocket !== undefined, 'the idle connection is kept alive')
  const idleClosed = once(idleSocket, 'close')

  // Ten clients, each posting orders back to back on its own keep-alive connection, until an
  // answer tells it the connection closes.
  let sigterm = false
  const outcomes: Outcome[] = []
  const lost: string[] = []
  const client = async (): Promise<void> => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    try {
      for (;;) {
        try {
          const answer = await postOrder(server.url, agent, customer, petId)
          outcomes.push({ ...answer, afterSigterm: sigterm })
          if (answer.connection === 'close') return
        } catch (error) {
          lost.push((error as Error).message)
          return
        }
      }
    } finally {
      agent.destroy()
    }
  }
  const clients = Array.from({ length: 10 }, () => client())
  while (outcomes.length < 100) await new Promise((resolve) => setImmediate(resolve))

  const stopAt = performance.now()
  server.child.kill('SIGTERM')
  sigterm = true
  await server.logLine((line) => line.msg === 'stopping: no new connections; finishing the requests in flight')
  slow.write(body.slice(10))
  await Promise.all(clients)
  const [code] = await exited
  const exitMs = performance.now() - stopAt

  assert.deepEqual(lost, [], 'no request sent on an open connection lost its answer')
  assert.ok(outcomes.every((o) => o.status === 201), `every order was placed: ${JSON.stringify(outcomes.filter((o) => o.status !== 201))}`)
  // Each client's last answer came during the stop and closed its connection.
  assert.equal(outcomes.filter((o) => o.connection === 'close').length, 10)
  assert.match(await slowAnswer, /^HTTP\/1\.1 201 Created\r\n[^]*\r\nconnection: close\r\n/i)
  await idleClosed
  assert.equal(code, 0)
  assert.ok(exitMs < 5000, `the process exited ${Math.round(exitMs)} ms after SIGTERM`)
  t.diagnostic(`${outcomes.length + 2} orders answered, ${outcomes.filter((o) => o.afterSigterm).length} of them answered after SIGTERM; exit ${Math.round(exitMs)} ms after it`)
  assert.ok(server.logs().some((l) => l.msg === 'every request in flight was answered'))
})

test('SIGTERM: a request still unfinished when SHUTDOWN_GRACE_MS has passed is cut, and the process exits 0 right after', { timeout: 30_000 }, async (t) => {
  const { server, customer, petId } = await sampleServer(t, { SHUTDOWN_GRACE_MS: '1000', REQUEST_TIMEOUT_MS: '60000' })
  const exited = once(server.child, 'exit') as Promise<[number | null, string | null]>
  const port = Number(new URL(server.url).port)
  // A body that never finishes (its deadline is a minute away).
  const stuck = connect(port, '127.0.0.1')
  await once(stuck, 'connect')
  stuck.write(`POST /v1/store/orders HTTP/1.1\r\nHost: localhost\r\nX-API-Key: ${customer}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"petId":${petId}`)
  stuck.on('error', () => {})
  const stuckClosed = once(stuck, 'close')
  const stopAt = performance.now()
  server.child.kill('SIGTERM')
  const [code] = await exited
  const exitMs = performance.now() - stopAt
  await stuckClosed
  assert.equal(code, 0)
  assert.ok(exitMs >= 1000 && exitMs < 4000, `the process exited ${Math.round(exitMs)} ms after SIGTERM (grace 1000 ms)`)
  const cut = await server.logLine((l) => l.msg === 'grace period over: connections with requests still in flight were closed')
  assert.equal(cut.cut, 1)
})
