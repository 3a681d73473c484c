// What the server tests share: a server started as `petstore serve` starts it (startServer) with
// the limits a test chooses, and a client on a bare TCP socket, which can misbehave in ways no
// HTTP client allows (trickling bytes, never finishing, malformed framing).
import { connect, type Socket } from 'node:net'
import type { TestContext } from 'node:test'
import { loadConfig } from '../../src/config.ts'
import { createKeyAdmin } from '../../src/keys/keys.service.ts'
import { loadSampleData } from '../../src/sample-data.ts'
import { createLogger, startServer, type RunningServer } from '../../src/server.ts'
import { systemClock } from '../../src/shared/clock.ts'

export interface TestServer {
  server: RunningServer
  port: number
  /** A customer key and a staff key on the server's database, which holds the sample catalogue (pet 1 is available, stock 1). */
  keys: { customer: string; staff: string }
}

/** startServer on an in-memory database and port 0, with these variables (limits) on top; closed after the test. Warnings go to `logLines` when given. */
export async function startTestServer (t: TestContext, env: Record<string, string>, logLines?: Array<Record<string, unknown>>): Promise<TestServer> {
  const config = loadConfig({ DATABASE_URL: 'sqlite::memory:', PORT: '0', LOG_LEVEL: logLines === undefined ? 'silent' : 'warn', ...env })
  const keys = { customer: '', staff: '' }
  const server = await startServer(config, {
    logger: createLogger(config, logLines === undefined ? undefined : { write: (line: string) => { logLines.push(JSON.parse(line) as Record<string, unknown>) } }),
    beforeListen: async (infra) => {
      await loadSampleData(infra.stores)
      const admin = createKeyAdmin(infra.stores.keys, systemClock)
      const quotas = { perMinute: 1_000_000, perDay: 1_000_000 }
      keys.customer = (await admin.create({ role: 'customer', plan: 'enterprise', ...quotas })).key
      keys.staff = (await admin.create({ role: 'staff', plan: 'enterprise', ...quotas })).key
    }
  })
  t.after(() => server.close())
  return { server, port: Number(new URL(server.url).port), keys }
}

export interface RawAnswer {
  /** Everything the server sent before it closed the connection. */
  text: string
  /** Milliseconds from the connection to its close. */
  ms: number
}

/**
 * Opens a TCP connection, writes `head`, then one byte of `trickle` every `everyMs` (when given),
 * and resolves with what came back once the server closes the connection. A write the server
 * refuses (it has closed) ends the trickle; it is not an error.
 */
export function rawExchange (port: number, head: string, trickle?: { bytes: string; everyMs: number }, from?: string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const chunks: Buffer[] = []
    let timer: NodeJS.Timeout | undefined
    // `from`: another loopback address of the client (127.0.0.2 …), a client apart from 127.0.0.1.
    const socket: Socket = connect({ port, host: '127.0.0.1', ...(from !== undefined && { localAddress: from }) }, () => {
      socket.write(head)
      if (trickle === undefined) return
      let i = 0
      timer = setInterval(() => {
        if (i >= trickle.bytes.length || !socket.writable) { clearInterval(timer); return }
        socket.write(trickle.bytes[i++]!)
      }, trickle.everyMs)
    })
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    socket.on('error', (error: NodeJS.ErrnoException) => {
      // The server closing on a client still writing shows up as EPIPE/ECONNRESET here: the
      // answer, if any, has been read already.
      if (error.code !== 'EPIPE' && error.code !== 'ECONNRESET') reject(error)
    })
    socket.on('close', () => {
      clearInterval(timer)
      resolve({ text: Buffer.concat(chunks).toString('latin1'), ms: performance.now() - started })
    })
  })
}

/** Opens a connection (from the loopback address `from`, when given) that sends nothing; resolves once it is established. */
export function idleConnection (port: number, from?: string): Promise<Socket & { ended: Promise<RawAnswer> }> {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const chunks: Buffer[] = []
    const socket = connect({ port, host: '127.0.0.1', ...(from !== undefined && { localAddress: from }) }) as Socket & { ended: Promise<RawAnswer> }
    socket.ended = new Promise((resolveClosed) => {
      socket.on('close', () => resolveClosed({ text: Buffer.concat(chunks).toString('latin1'), ms: performance.now() - started }))
    })
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    socket.on('error', () => {})
    socket.once('connect', () => resolve(socket))
    socket.once('error', reject)
  })
}

export interface ParsedAnswer {
  status: number
  headers: Record<string, string>
  body: unknown
}

/** Parses one HTTP/1.1 answer with a Content-Length and a JSON body. */
export function parseAnswer (text: string): ParsedAnswer {
  const end = text.indexOf('\r\n\r\n')
  if (end < 0) throw new Error(`not an HTTP answer: ${JSON.stringify(text.slice(0, 200))}`)
  const [statusLine = '', ...lines] = text.slice(0, end).split('\r\n')
  const headers: Record<string, string> = {}
  for (const line of lines) {
    const colon = line.indexOf(':')
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim()
  }
  const rest = text.slice(end + 4)
  const length = Number(headers['content-length'])
  if (rest.length !== length) throw new Error(`expected ${length} body bytes and nothing after them, got ${JSON.stringify(rest)}`)
  return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(rest) }
}
