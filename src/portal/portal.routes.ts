// /portal: the partner portal (docs/product.md, "Partner portal"), served by the API like /console.
// GET /portal is the page (src/portal/ui/portal.html) naming its assets by versioned names, the
// files src/portal/ui/assets.json lists (a file may come from another folder, `from`: the
// console's shared layout, tables and chart); GET /portal/assets/* serves them (transport/static-ui.ts,
// as it serves /console).
//
// The session routes (outside /v1, described in docs/api.md, hidden from the document like /mcp):
// - POST /portal/session exchanges a one-time link for a session: 201, the session, and the
//   HttpOnly cookie; 401 portal_link_invalid. Bounded per client address (EXCHANGES_PER_ADDRESS).
// - GET /portal/session: 200, the session; 401 portal_session_ended.
// - DELETE /portal/session: sign out, 204; 403 csrf_token_invalid without the session's token.
//
// Every answer under /portal, the session routes' too, carries the console's Content-Security-Policy
// (no inline script or style, nothing from another host, no framing) and no Referer: static-ui.ts
// adds them to every route of this plugin.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { readFile } from 'node:fs/promises'
import { subjectOfAddress } from '../access/client-subject.ts'
import { cookieValue, PORTAL_COOKIE } from '../access/portal-gate.ts'
import { AppError } from '../errors.ts'
import type { Quota, RateLimiter } from '../ratelimit/limiter.ts'
import { staticUi, UI_CSP, type UiFile } from '../transport/static-ui.ts'
import { PortalExchangeBody } from './portal.schema.ts'
import { SESSION_MAX_MS, type Portal } from './portal.service.ts'

/**
 * Link exchanges per client address: a person opens a link or two; a link token is 256 random
 * bits, so this bounds nothing a guess could reach, only the database work a flood would cost.
 */
export const EXCHANGES_PER_ADDRESS: Quota = { perMinute: 10, perDay: 500 }

/** The console's Content-Security-Policy: the one every UI of the API has (transport/static-ui.ts). */
export const PORTAL_CSP = UI_CSP

interface AssetEntry { file: string; from?: string; type: string }

const UI = new URL('./ui/', import.meta.url)

const servePortal = staticUi({
  path: '/portal',
  html: new URL('portal.html', UI),
  // The files ui/assets.json lists, each from ui/ or from where its `from` says (the console's folder).
  files: async (): Promise<UiFile[]> => {
    const list = JSON.parse(await readFile(new URL('assets.json', UI), 'utf8')) as AssetEntry[]
    return list.map((entry) => ({ file: entry.file, source: new URL(entry.from ?? entry.file, UI), type: entry.type }))
  }
})

/** The cookie that holds a session: never readable by the page, sent only to /portal, same site only. */
function sessionCookie (request: FastifyRequest, value: string, maxAgeSeconds: number): string {
  const secure = request.protocol === 'https' ? '; Secure' : ''
  return `${PORTAL_COOKIE}=${value}; Path=/portal; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Strict${secure}`
}

const cookieOf = (request: FastifyRequest): string | null => cookieValue(request.headers.cookie, PORTAL_COOKIE)

const clearCookie = (request: FastifyRequest, reply: FastifyReply): void => {
  reply.header('set-cookie', sessionCookie(request, '', 0))
}

export async function portalRoutes (
  fastify: FastifyInstance,
  { portal, limiter }: { portal: Portal; limiter: RateLimiter }
): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  // The page and its assets, and the CSP on this plugin's routes (Fastify encapsulation): the page,
  // its assets, the session routes, their 404s.
  servePortal(app)

  /** Charges one exchange to the client address; throws 429 rate_limited (with Retry-After) past the bound. */
  async function chargeExchange (request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const decision = await limiter.consume(`portal:${subjectOfAddress(request.ip)}`, EXCHANGES_PER_ADDRESS)
    if (decision.allowed) return
    reply.header('retry-after', String(Math.max(1, decision.retryAfterSeconds)))
    throw new AppError('rate_limited', `too many portal links opened from this address; retry in ${decision.retryAfterSeconds} s`)
  }

  app.post('/portal/session', {
    schema: { hide: true, body: PortalExchangeBody }
  }, async (request, reply) => {
    await chargeExchange(request, reply)
    const { token, view } = await portal.exchange(request.body.link)
    reply.code(201)
      .header('cache-control', 'no-store')
      .header('set-cookie', sessionCookie(request, token, SESSION_MAX_MS / 1000))
    return view
  })

  app.get('/portal/session', { schema: { hide: true } }, async (request, reply) => {
    reply.header('cache-control', 'no-store')
    try {
      return await portal.session(cookieOf(request))
    } catch (error) {
      // An ended session's cookie is of no more use: the browser forgets it.
      if (cookieOf(request) !== null) clearCookie(request, reply)
      throw error
    }
  })

  app.delete('/portal/session', { schema: { hide: true } }, async (request, reply) => {
    const csrf = request.headers['x-csrf-token']
    await portal.signOut(cookieOf(request), typeof csrf === 'string' ? csrf : null)
    clearCookie(request, reply)
    reply.header('cache-control', 'no-store')
    return reply.code(204).send()
  })
}
