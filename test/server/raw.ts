// What the server tests share: a client on a bare TCP socket, which can misbehave in ways no HTTP
// client allows (trickling bytes, never finishing, malformed framing). The server it talks to is
// startTestServer of test/helpers/server.ts (startServer in process, with the limits a test chooses).
import { connect, type Socket } from 'node:net'

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
export function rawExchange (
  port: number,
  head: string,
  trickle?: { bytes: string; everyMs: number },
  from?: string
): Promise<RawAnswer> {
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

/**
 * Opens a connection (from the loopback address `from`, when given) that sends nothing; resolves
 * once it is established.
 */
export function idleConnection (port: number, from?: string): Promise<Socket & { ended: Promise<RawAnswer> }> {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const chunks: Buffer[] = []
    const socket = connect({ port, host: '127.0.0.1', ...(from !== undefined && { localAddress: from }) }) as Socket & {
      ended: Promise<RawAnswer>
    }
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
