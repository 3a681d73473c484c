// Real webhook receivers for the delivery tests: node:http or node:https servers on a 127.0.0.0/8
// address that record every request they get, closed when the test ends.
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import {
  createServer as createHttpServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse
} from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import type { TLSSocket } from 'node:tls'
import { tempDir } from '../helpers/temp.ts'

export interface Received {
  method: string
  url: string
  headers: IncomingHttpHeaders
  body: string
  /** The address the connection came in on: shows which address the sender connected to. */
  localAddress: string
  /** The TLS server name the sender asked for (SNI), on https receivers. */
  servername?: string | false | null
}

/** Answers the request once its body has been read; the default answers 204. */
export type Answer = (req: IncomingMessage, res: ServerResponse) => void

export interface Receiver {
  port: number
  received: Received[]
  server: Server
}

export interface ReceiverOptions {
  host?: string
  /** A fixed port (two receivers on two addresses can share one); 0 by default. */
  port?: number
  tls?: { key: string; cert: string }
}

export async function startReceiver (
  t: TestContext,
  answer: Answer = (_req, res) => { res.writeHead(204).end() },
  options: ReceiverOptions = {}
): Promise<Receiver> {
  const received: Received[] = []
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const servername = options.tls === undefined ? undefined : (req.socket as TLSSocket).servername
      received.push({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
        localAddress: req.socket.localAddress ?? '',
        ...(servername === undefined ? {} : { servername })
      })
      answer(req, res)
    })
  }
  const server: Server = options.tls === undefined ? createHttpServer(handle) : createHttpsServer(options.tls, handle)
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve))
  t.after(async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  })
  return { port: (server.address() as AddressInfo).port, received, server }
}

/** A port on 127.0.0.1 that nothing listens on (a server took it and closed). */
export async function closedPort (): Promise<number> {
  const server = createHttpServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** A self-signed certificate for one DNS name, made by openssl in the test's temporary directory. */
export function selfSignedCert (t: TestContext, name: string): { key: string; cert: string } {
  const dir = tempDir(t, 'petstore-webhook-tls-')
  const key = join(dir, 'key.pem')
  const cert = join(dir, 'cert.pem')
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', key, '-out', cert, '-days', '1', '-subj', `/CN=${name}`, '-addext', `subjectAltName=DNS:${name}`], { stdio: 'ignore' })
  return { key: readFileSync(key, 'utf8'), cert: readFileSync(cert, 'utf8') }
}
