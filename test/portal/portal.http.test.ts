// The partner portal's way in (docs/product.md, "Partner portal"), over a real socket with a cookie
// jar kept by hand: the one-time link, its exchange for a session cookie, the door
// /portal/api/v1 acting as the key (same charges, free reads, audit entries marked via portal),
// CSRF, the ends of a session (idle, 24 h, sign-out, revocation, rotation) and sessions shared by
// two apps on one database. Runs on both engines (PETSTORE_TEST_ENGINE=postgres).
import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { buildTestApp, listenTestApp, T0, type TestApp, type TestAppOptions } from '../helpers/app.ts'
import { hashKey } from '../../src/accounts/keys.rules.ts'
import { loadConfig } from '../../src/config.ts'
import { createLogger } from '../../src/server.ts'
import { CONSOLE_CSP } from '../../src/console/console.routes.ts'
import { PORTAL_CSP } from '../../src/portal/portal.routes.ts'

const MINUTE = 60_000

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a JSON answer, read field by field by the assertions
type Json = any
interface Answer { status: number; headers: Headers; body: Json; text: string }
interface FetchInit { method?: string; body?: unknown; headers?: Record<string, string>; csrf?: string | null }

/** A browser's view of one origin: a cookie jar by hand, and every answer checked never to carry a key. */
class Browser {
  cookie: string | null = null
  csrf: string | null = null
  readonly secrets: string[]
  readonly origin: string
  constructor (origin: string, secrets: string[]) { this.origin = origin; this.secrets = secrets }

  async fetch (path: string, init: FetchInit = {}): Promise<Answer> {
    const headers: Record<string, string> = { ...init.headers }
    if (this.cookie !== null) headers.cookie = this.cookie
    const csrf = init.csrf === undefined ? this.csrf : init.csrf
    if (csrf !== null && init.method !== undefined && init.method !== 'GET') headers['x-csrf-token'] = csrf
    if (init.body !== undefined) headers['content-type'] = 'application/json'
    const response = await fetch(this.origin + path, {
      method: init.method ?? 'GET',
      headers,
      ...(init.body !== undefined && { body: JSON.stringify(init.body) })
    })
    const text = await response.text()
    for (const secret of this.secrets) {
      assert.ok(!text.includes(secret), `${path}: the key is in the body`)
      for (const [name, value] of response.headers) assert.ok(!value.includes(secret), `${path}: the key is in ${name}`)
    }
    const setCookie = response.headers.get('set-cookie')
    if (setCookie !== null) {
      const [pair = ''] = setCookie.split(';')
      this.cookie = pair.endsWith('=') ? null : pair
    }
    const body: unknown = text === '' || !text.startsWith('{') ? text : JSON.parse(text)
    return { status: response.status, headers: response.headers, body, text }
  }

  /** Opens a link as portal.js does: the token from the fragment, POST /portal/session. */
  async open (url: string): Promise<Answer> {
    const token = decodeURIComponent(url.slice(url.indexOf('#link=') + 6))
    const answer = await this.fetch('/portal/session', { method: 'POST', body: { link: token } })
    if (answer.status === 201) this.csrf = (answer.body as { csrfToken: string }).csrfToken
    return answer
  }
}

type PortalTestApp = TestApp & { origin: string; browser: Browser; link: (key: string) => Promise<string> }

async function setUp (t: TestContext, options: TestAppOptions = {}): Promise<PortalTestApp> {
  const app = await listenTestApp(t, options)
  const origin = app.baseUrl.slice(0, -'/v1'.length)
  const link = async (key: string): Promise<string> => {
    const response = await fetch(`${origin}/v1/keys/me/portal`, { method: 'POST', headers: { 'x-api-key': key } })
    assert.equal(response.status, 201)
    return ((await response.json()) as { url: string }).url
  }
  return { ...app, origin, browser: new Browser(origin, Object.values(app.keys)), link }
}

const minuteRemaining = (answer: Answer): number => Number(answer.headers.get('x-ratelimit-remaining'))

test('a link opens a session: an HttpOnly, SameSite=Strict, Path=/portal cookie; the door acts as the key; the key is never sent', async (t) => {
  const { browser, link, keys, origin, app } = await setUp(t)
  const url = await link(keys.customer)
  assert.match(url, new RegExp(`^${origin.replace(/[.]/g, '\\.')}/portal#link=[A-Za-z0-9_-]{43}$`))

  const opened = await browser.open(url)
  assert.equal(opened.status, 201)
  const me = (await app.inject({ method: 'GET', url: '/v1/keys/me', headers: { 'x-api-key': keys.customer } })).json()
  assert.deepEqual(Object.keys(opened.body).sort(), ['csrfToken', 'expiresAt', 'keyId', 'name', 'role'])
  assert.equal(opened.body.keyId, me.id)
  assert.equal(opened.body.role, 'customer')
  assert.equal(opened.body.expiresAt, new Date(T0 + 24 * 60 * MINUTE).toISOString())
  const cookie = opened.headers.get('set-cookie') ?? ''
  assert.match(cookie, /^petstore_portal=[A-Za-z0-9_-]{43}; Path=\/portal; Max-Age=86400; HttpOnly; SameSite=Strict$/, 'no Secure over plain HTTP')
  assert.equal(opened.headers.get('cache-control'), 'no-store')

  const session = await browser.fetch('/portal/session')
  assert.equal(session.status, 200)
  assert.deepEqual(session.body, opened.body)

  const mine = await browser.fetch('/portal/api/v1/keys/me')
  assert.equal(mine.status, 200)
  assert.equal(mine.body.id, me.id)
  assert.equal(mine.headers.get('content-type'), 'application/json; charset=utf-8')
  assert.ok(mine.headers.get('request-id') !== null)

  // Without the cookie, the door is shut, whatever key header comes with it.
  const stranger = new Browser(origin, [])
  const shut = await stranger.fetch('/portal/api/v1/keys/me', { headers: { 'x-api-key': keys.admin } })
  assert.equal(shut.status, 401)
  assert.equal(shut.body.code, 'portal_session_ended')
  assert.equal((await stranger.fetch('/portal/session')).body.code, 'portal_session_ended')
})

test('a link is refused used twice, expired, or for a key revoked since, with a message in words', async (t) => {
  const { browser, link, keys, origin, clock, call, makeKey } = await setUp(t)
  const url = await link(keys.customer)
  assert.equal((await browser.open(url)).status, 201)
  const again = await new Browser(origin, []).open(url)
  assert.equal(again.status, 401)
  assert.equal(again.body.code, 'portal_link_invalid')
  assert.match(again.body.message, /already used/)

  const late = await link(keys.customer)
  clock.advance(15 * MINUTE)
  const expired = await new Browser(origin, []).open(late)
  assert.equal(expired.status, 401)
  assert.match(expired.body.message, /expired/)

  const other = await makeKey('customer')
  const forRevoked = await link(other.key)
  assert.equal((await call({ method: 'DELETE', url: `/v1/admin/keys/${other.id}` })).statusCode, 204)
  const revoked = await new Browser(origin, []).open(forRevoked)
  assert.equal(revoked.status, 401)
  assert.match(revoked.body.message, /revoked/)

  const unknown = await new Browser(origin, []).open('x#link=' + 'A'.repeat(43))
  assert.equal(unknown.status, 401)
  assert.match(unknown.body.message, /not known/)
})

test('an admin makes a link for any key; the CLI\'s counterpart is petstore keys portal-link', async (t) => {
  const { browser, keys, origin, call, makeKey } = await setUp(t)
  const other = await makeKey('staff')
  const made = await call({ method: 'POST', url: `/v1/admin/keys/${other.id}/portal` })
  assert.equal(made.statusCode, 201)
  const url = new URL(made.json<{ url: string }>().url)
  assert.equal(url.pathname, '/portal')
  const opened = await browser.open(made.json<{ url: string }>().url)
  assert.equal(opened.body.keyId, other.id)
  assert.equal(opened.body.role, 'staff')
  assert.equal((await call({ method: 'POST', url: '/v1/admin/keys/999999/portal' })).statusCode, 404)
  assert.equal((await call({ method: 'POST', url: `/v1/admin/keys/${other.id}/portal`, key: keys.customer })).statusCode, 403)
  void origin
})

test('a session ends after an hour idle and after 24 hours, whatever its use', async (t) => {
  const { browser, link, keys, clock } = await setUp(t)
  await browser.open(await link(keys.customer))
  clock.advance(59 * MINUTE)
  assert.equal((await browser.fetch('/portal/api/v1/keys/me')).status, 200)
  clock.advance(59 * MINUTE)
  assert.equal((await browser.fetch('/portal/session')).status, 200, 'each use keeps it alive')
  clock.advance(60 * MINUTE)
  const idle = await browser.fetch('/portal/api/v1/keys/me')
  assert.equal(idle.status, 401)
  assert.equal(idle.body.code, 'portal_session_ended')

  const fresh = new Browser(browser.origin, [])
  await fresh.open(await link(keys.customer))
  for (let i = 0; i < 28; i++) {
    clock.advance(50 * MINUTE)
    const answer = await fresh.fetch('/portal/session')
    if (i < 28 && (i + 1) * 50 < 24 * 60) assert.equal(answer.status, 200, `after ${(i + 1) * 50} minutes`)
    else {
      assert.equal(answer.status, 401)
      assert.match(answer.body.message, /24 hours/)
      assert.match(answer.headers.get('set-cookie') ?? '', /^petstore_portal=; Path=\/portal; Max-Age=0/)
    }
  }
})

test('revoking the key, or its rotation\'s grace period ending, ends the session at once', async (t) => {
  const { browser, link, origin, clock, call, makeKey } = await setUp(t)
  const a = await makeKey('customer')
  browser.secrets.push(a.key)
  await browser.open(await link(a.key))
  assert.equal((await call({ method: 'DELETE', url: `/v1/admin/keys/${a.id}` })).statusCode, 204)
  const after = await browser.fetch('/portal/api/v1/keys/me')
  assert.equal(after.status, 401)
  assert.equal(after.body.code, 'portal_session_ended')

  const b = await makeKey('customer')
  const rotating = new Browser(origin, [b.key])
  await rotating.open(await link(b.key))
  const rotated = await rotating.fetch('/portal/api/v1/keys/me/rotate', { method: 'POST', body: { gracePeriodSeconds: 60 } })
  assert.equal(rotated.status, 201)
  assert.equal(typeof rotated.body.key, 'string', 'a rotation shows its new key once, as through /v1')
  assert.equal((await rotating.fetch('/portal/session')).status, 200, 'within the grace period')
  clock.advance(61_000)
  const ended = await rotating.fetch('/portal/session')
  assert.equal(ended.status, 401)
  assert.match(ended.body.message, /rotated/)
})

test('sign out ends the session at once; it needs the CSRF token', async (t) => {
  const { browser, link, keys } = await setUp(t)
  await browser.open(await link(keys.customer))
  const refused = await browser.fetch('/portal/session', { method: 'DELETE', csrf: null })
  assert.equal(refused.status, 403)
  assert.equal(refused.body.code, 'csrf_token_invalid')
  const cookie = browser.cookie
  const out = await browser.fetch('/portal/session', { method: 'DELETE' })
  assert.equal(out.status, 204)
  assert.match(out.headers.get('set-cookie') ?? '', /^petstore_portal=; Path=\/portal; Max-Age=0; HttpOnly; SameSite=Strict$/)
  // The old cookie, replayed, opens nothing.
  browser.cookie = cookie
  assert.equal((await browser.fetch('/portal/api/v1/keys/me')).status, 401)
})

test('a change through the portal needs X-CSRF-Token: 403 csrf_token_invalid without it or with another, nothing changed', async (t) => {
  const { browser, call, keys, stores } = await setUp(t)
  const staff = (await stores.keys.findKeyByHash(hashKey(keys.staff)))!
  const made = await call({ method: 'POST', url: `/v1/admin/keys/${staff.id}/portal` })
  await browser.open(made.json<{ url: string }>().url)
  const without = await browser.fetch('/portal/api/v1/categories', { method: 'POST', body: { name: 'Birds' }, csrf: null })
  assert.equal(without.status, 403)
  assert.equal(without.body.code, 'csrf_token_invalid')
  const wrong = await browser.fetch('/portal/api/v1/categories', { method: 'POST', body: { name: 'Birds' }, csrf: 'x'.repeat(43) })
  assert.equal(wrong.status, 403)
  assert.equal(wrong.body.code, 'csrf_token_invalid')
  const list = await call({ method: 'GET', url: '/v1/categories' })
  assert.ok(!list.json<Array<{ name: string }>>().some((c) => c.name === 'Birds'), 'nothing was made')
  const right = await browser.fetch('/portal/api/v1/categories', { method: 'POST', body: { name: 'Birds' } })
  assert.equal(right.status, 201)
})

test('a change through the portal leaves the audit entry /v1 leaves, actor the key, marked via portal', async (t) => {
  const { browser, call, keys, stores } = await setUp(t)
  const admin = (await stores.keys.findKeyByHash(hashKey(keys.admin)))!
  await browser.open((await call({ method: 'POST', url: `/v1/admin/keys/${admin.id}/portal` })).json<{ url: string }>().url)
  assert.equal((await call({ method: 'POST', url: '/v1/categories', payload: { name: 'Direct' } })).statusCode, 201)
  assert.equal((await browser.fetch('/portal/api/v1/categories', { method: 'POST', body: { name: 'Portal' } })).status, 201)
  const entries = (await call({ method: 'GET', url: '/v1/admin/audit?action=category.create' })).json<Array<Record<string, Json>>>()
  const [portal, direct] = entries
  assert.deepEqual(direct!.actor, { type: 'key', keyId: admin.id, role: 'admin' })
  assert.deepEqual(portal!.actor, { type: 'key', keyId: admin.id, role: 'admin', via: 'portal' })
  assert.equal(portal!.address, direct!.address)
  assert.deepEqual(portal!.changes.name, { before: null, after: 'Portal' })
  assert.equal(portal!.action, direct!.action)
})

test('the door charges what /v1 charges, to the same windows; the reads the portal makes often are free', async (t) => {
  const { browser, link, keys } = await setUp(t)
  await browser.open(await link(keys.customer))
  const direct = async (path: string): Promise<Answer> => {
    const response = await fetch(browser.origin + path, { headers: { 'x-api-key': keys.customer } })
    return { status: response.status, headers: response.headers, body: await response.json(), text: '' }
  }
  const before = minuteRemaining(await direct('/v1/rate_limit'))
  assert.equal(minuteRemaining(await browser.fetch('/portal/api/v1/pets')), before - 1, 'a list costs one, as with the key')
  assert.equal(minuteRemaining(await direct('/v1/pets')), before - 2, 'the same window')
  for (const path of ['/keys/me', '/keys/me/usage', '/keys/me/bans', '/rate_limit']) {
    const answer = await browser.fetch(`/portal/api/v1${path}`)
    assert.equal(answer.status, 200, path)
    assert.equal(minuteRemaining(answer), before - 2, `${path} is free through the portal`)
  }
  assert.equal(minuteRemaining(await direct('/v1/keys/me')), before - 3, 'and charged with the key, as before')
  assert.equal(minuteRemaining(await browser.fetch('/portal/api/v1/keys/me/portal', { method: 'POST' })), before - 4, 'a link is charged as a read')
})

test('sessions are server-side: a second app on the same database serves them (a restart, another instance)', async (t) => {
  const first = await setUp(t)
  await first.browser.open(await first.link(first.keys.customer))
  const second = await buildTestApp(t, { stores: first.stores })
  const answer = await second.app.inject({ method: 'GET', url: '/portal/api/v1/keys/me', headers: { cookie: first.browser.cookie! } })
  assert.equal(answer.statusCode, 200)
  const link = await second.app.inject({ method: 'GET', url: '/portal/session', headers: { cookie: first.browser.cookie! } })
  assert.equal(link.json<{ csrfToken: string }>().csrfToken, first.browser.csrf)
})

test('POST /portal/session takes JSON only and bounds the exchanges per client address', async (t) => {
  const { origin } = await setUp(t)
  const text = await fetch(`${origin}/portal/session`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'link=x' })
  assert.equal(text.status, 415)
  const browser = new Browser(origin, [])
  const statuses: number[] = []
  for (let i = 0; i < 11; i++) statuses.push((await browser.fetch('/portal/session', { method: 'POST', body: { link: 'B'.repeat(43) } })).status)
  assert.deepEqual(statuses.slice(0, 9), Array(9).fill(401))
  assert.equal(statuses.at(-1), 429)
})

test('GET /portal serves the page and its versioned assets under the console\'s CSP, no framing, no referrer', async (t) => {
  const { origin } = await setUp(t)
  assert.equal(PORTAL_CSP, CONSOLE_CSP)
  const page = await fetch(`${origin}/portal`)
  assert.equal(page.status, 200)
  assert.equal(page.headers.get('content-security-policy'), CONSOLE_CSP)
  assert.match(CONSOLE_CSP, /frame-ancestors 'none'/)
  assert.equal(page.headers.get('referrer-policy'), 'no-referrer')
  const html = await page.text()
  const assets = [...html.matchAll(/(?:src|href)="(\/portal\/assets\/[^"]+)"/g)].map((m) => m[1]!)
  assert.ok(assets.length >= 2, 'the page names its assets')
  assert.doesNotMatch(html, /\{\{/)
  for (const asset of assets) {
    const answer = await fetch(origin + asset)
    assert.equal(answer.status, 200, asset)
    assert.match(answer.headers.get('cache-control') ?? '', /immutable/)
  }
  const session = await fetch(`${origin}/portal/session`)
  assert.equal(session.headers.get('content-security-policy'), CONSOLE_CSP)
})

/** The production logger (same options), writing its JSON lines to memory, as test/http/logging tests do. */
function capturedLogger () {
  const chunks: string[] = []
  const logger = createLogger(loadConfig({ LOG_LEVEL: 'info' }), { write: (chunk: string) => { chunks.push(chunk) } })
  return {
    logger,
    text: () => chunks.join(''),
    lines: (): Array<Record<string, Json>> => chunks.join('').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l))
  }
}

// Fault caught: a call through the door logged as a plain /v1 call (`via: "http"`, no `via` in the
// operator's line), so neither the key holder nor the operator can tell the portal's calls apart;
// a door call after the key was revoked in no log.
test('a call through the door is in the key\'s request log and the operator\'s line marked via portal; after a revocation, its refusal is in the key\'s log', async (t) => {
  const log = capturedLogger()
  const { browser, link, makeKey, call, stores, origin } = await setUp(t, { deps: { logger: log.logger } })
  const { id, key } = await makeKey('customer')
  browser.secrets.push(key)
  await browser.open(await link(key))
  const viaDoor = await browser.fetch('/portal/api/v1/pets?limit=2')
  assert.equal(viaDoor.status, 200)
  const refused = await browser.fetch('/portal/api/v1/categories', { method: 'POST', body: { name: 'Birds' } })
  assert.equal(refused.status, 403, 'a customer may not make a category: the line of a failure is written by pino')
  const direct = await fetch(`${origin}/v1/pets`, { headers: { 'x-api-key': key } })
  assert.equal(direct.status, 200)

  const requests = await browser.fetch('/portal/api/v1/keys/me/requests')
  assert.equal(requests.status, 200)
  const byId = new Map<string, Json>((JSON.parse(requests.text) as Json[]).map((e: Json) => [e.requestId, e]))
  const doorId = viaDoor.headers.get('request-id')!
  const refusedId = refused.headers.get('request-id')!
  const directId = direct.headers.get('request-id')!
  const seen = (requestId: string): Json[] => {
    const entry = byId.get(requestId)
    return [entry?.via, entry?.route, entry?.status]
  }
  assert.deepEqual([doorId, refusedId, directId].map(seen), [
    ['portal', '/v1/pets', 200],
    ['portal', '/v1/categories', 403],
    ['http', '/v1/pets', 200]
  ])
  assert.deepEqual(byId.get(refusedId).refusal, { rule: 'role', message: refused.body.message, needed: 'staff' })

  const lines = log.lines()
  const lineOf = (requestId: string): Record<string, Json> => {
    const mine = lines.filter((l) => l.reqId === requestId)
    assert.equal(mine.length, 1, JSON.stringify(mine))
    return mine[0]!
  }
  // The common line is built by hand (http/request-log.ts): `via` where pino would put it.
  const { level: _l, time: _t, pid: _p, hostname: _h, responseTime, ...door } = lineOf(doorId)
  assert.equal(typeof responseTime, 'number')
  assert.deepEqual(door, { reqId: doorId, keyId: id, via: 'portal', method: 'GET', url: '/v1/pets?limit=2', statusCode: 200, msg: 'request completed' })
  assert.deepEqual(Object.keys(lineOf(doorId)), ['level', 'time', 'pid', 'hostname', 'reqId', 'keyId', 'via', 'method', 'url', 'statusCode', 'responseTime', 'msg'])
  const failed = lineOf(refusedId)
  assert.deepEqual([failed.via, failed.keyId, failed.url, failed.statusCode, failed.code], ['portal', id, '/v1/categories', 403, 'forbidden'])
  assert.equal(lineOf(directId).via, undefined, 'a call with the key is no portal call')
  assert.ok(!log.text().includes(key), 'the key is in no line')

  // Revoked: the session ends, and the door's refusal is in the key's own log, rule key.
  assert.equal((await call({ method: 'DELETE', url: `/v1/admin/keys/${id}` })).statusCode, 204)
  const ended = await browser.fetch('/portal/api/v1/keys/me')
  assert.equal(ended.status, 401)
  assert.equal(ended.body.code, 'portal_session_ended')
  // Any key's read flushes the recorder (key-requests.service.ts); the revoked key cannot read its own.
  assert.equal((await call({ method: 'GET', url: '/v1/keys/me/requests' })).statusCode, 200)
  const [entry] = await stores.keyRequests.list(id, { requestId: ended.headers.get('request-id')! }, null, 1)
  assert.ok(entry !== undefined, 'the refusal is in the revoked key\'s log')
  assert.deepEqual([entry.route, entry.status, entry.code, entry.via, entry.refusal?.rule], ['/v1/keys/me', 401, 'portal_session_ended', 'portal', 'key'])
  assert.equal(entry.refusal !== null && 'state' in entry.refusal ? entry.refusal.state : null, 'revoked')
})
