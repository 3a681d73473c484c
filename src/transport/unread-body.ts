// A request that no route takes (404, or 405 on a known path) is answered without reading its
// body, and its connection closed after the answer. Fastify would read the whole body before its
// not-found handler runs: a body of 60 KB sent a byte every 2 s held a connection busy for the
// whole request deadline, and 1,100 of them locked every other client out (issue 30). Node
// cannot resume the connection after an unread body but by reading it, hence the close.
import type { IncomingMessage } from 'node:http'
import type { FastifyReply, FastifyRequest } from 'fastify'

/** Whether the request announces a body (a Content-Length above 0, or chunked). */
function announcesBody (headers: Record<string, string | string[] | undefined>): boolean {
  const length = headers['content-length']
  return headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
}

/** The flag of Node's IncomingMessage that its own `_read` sets, and that its server reads after the answer. */
type NodeIncoming = IncomingMessage & { _consuming?: boolean }

/**
 * Called by the server in front of Fastify (transport/connections.ts) for every request. After
 * each answer, Node's server "dumps" a request nobody read (resume, flow, read, end, destroy: five
 * ticks), so that the rest of its body is pulled off the wire. A request that announces no body
 * has nothing on the wire to pull: it is marked as being read, as Node's own `_read` marks it, and
 * the dump is skipped (7 to 9% of a read's CPU, docs/performance.md). Its stream still ends when
 * read, like any other; a request that announces a body is left to Node.
 */
export function skipDumpOfBodiless (request: IncomingMessage): void {
  if (!announcesBody(request.headers)) (request as NodeIncoming)._consuming = true
}

/**
 * Called by the pipeline step (http/pipeline.ts) first, before the access decision, so that any
 * answer to such a request (a 401 or 429 under /v1 too) closes the connection. Fastify parses no
 * body when a request has neither Content-Type nor a length: those are hidden from Fastify's view
 * of the headers (its `request.headers` setter; the raw request keeps them, for the log).
 */
export function leaveUnroutedBodyUnread (request: FastifyRequest, reply: FastifyReply): void {
  if (request.is404 && announcesBody(request.raw.headers)) {
    request.headers = { 'content-type': undefined, 'content-length': '0', 'transfer-encoding': undefined }
    reply.header('connection', 'close')
  }
}
