// The partner portal's edges: the cookie is Secure and the link https when a trusted proxy says so;
// `petstore keys portal-link` makes a link that opens a session; the prune job deletes ended
// sessions and old links, and nothing live.
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test } from 'node:test'
import { keys as keysCommand } from '../../src/cli/keys.ts'
import { loadConfig } from '../../src/config.ts'
import { openStores } from '../../src/infra.ts'
import { createKeyAdmin } from '../../src/keys/keys.service.ts'
import { portalDoorTarget } from '../../src/http/instance.ts'
import { portalSessionsPruneJob } from '../../src/jobs/portal-sessions-prune.ts'
import { createPortal, LINK_KEPT_MS, SESSION_IDLE_MS } from '../../src/portal/portal.service.ts'
import { manualClock } from '../../src/shared/clock.ts'
import { buildTestApp, T0 } from '../helpers/app.ts'
import { memoryIo } from '../helpers/io.ts'
import { tempDir } from '../helpers/temp.ts'

test('behind a trusted proxy that says https, the link is https at the forwarded host and the cookie Secure', async (t) => {
  const { app, keys } = await buildTestApp(t, { env: { TRUST_PROXY: '1' } })
  const proxied = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'api.shop.example' }
  const made = await app.inject({ method: 'POST', url: '/v1/keys/me/portal', headers: { 'x-api-key': keys.customer, ...proxied } })
  assert.equal(made.statusCode, 201)
  const url = made.json<{ url: string }>().url
  assert.match(url, /^https:\/\/api\.shop\.example\/portal#link=/)
  const opened = await app.inject({
    method: 'POST', url: '/portal/session', headers: proxied, payload: { link: url.split('#link=')[1] }
  })
  assert.equal(opened.statusCode, 201)
  assert.match(String(opened.headers['set-cookie']), /; HttpOnly; SameSite=Strict; Secure$/)
  // Not trusted: the proxy's word is not taken.
  const direct = await buildTestApp(t)
  const plain = await direct.app.inject({ method: 'POST', url: '/v1/keys/me/portal', headers: { 'x-api-key': direct.keys.customer, ...proxied } })
  assert.match(plain.json<{ url: string }>().url, /^http:\/\/localhost/)
})

test('only /portal/api/v1 and what is under it is the door', () => {
  assert.equal(portalDoorTarget('/portal/api/v1/keys/me?x=1'), '/v1/keys/me?x=1')
  assert.equal(portalDoorTarget('/portal/api/v1'), '/v1')
  assert.equal(portalDoorTarget('/portal/api/v1?x'), '/v1?x')
  assert.equal(portalDoorTarget('/portal/api/v10/keys'), null)
  assert.equal(portalDoorTarget('/portal/session'), null)
  assert.equal(portalDoorTarget('/v1/keys/me'), null)
})

test('petstore keys portal-link ID --base-url prints a link that opens a session as that key, once', async (t) => {
  const env = { DATABASE_URL: `sqlite:${join(tempDir(t), 'p.db')}` }
  const stores = await openStores(loadConfig(env), { migrate: true })
  t.after(() => stores.close())
  const { record } = await createKeyAdmin(stores.keys, { now: () => Date.now() }).create({ role: 'customer', plan: 'free' })
  const io = memoryIo(env)
  assert.equal(await keysCommand(['portal-link', String(record.id), '--base-url', 'https://api.shop.example/v1', '--json'], io), 0)
  const { url } = JSON.parse(io.lines[0]!) as { url: string }
  assert.match(url, /^https:\/\/api\.shop\.example\/portal#link=[A-Za-z0-9_-]{43}$/)
  const portal = createPortal(stores.portal, stores.keys, { now: () => Date.now() })
  const { view } = await portal.exchange(url.split('#link=')[1]!)
  assert.equal(view.keyId, record.id)
  await assert.rejects(portal.exchange(url.split('#link=')[1]!), { code: 'portal_link_invalid' })
  const bad = memoryIo(env)
  assert.equal(await keysCommand(['portal-link', String(record.id), '--base-url', 'ftp://x'], bad), 2)
  assert.match(bad.errors.join('\n'), /--base-url must be an http\(s\) URL/)
})

test('petstore keys portal-link ID without --base-url points at HOST and PORT, and says so', async (t) => {
  const dir = tempDir(t)
  const cases: [Record<string, string>, string][] = [
    [{ HOST: '0.0.0.0', PORT: '8080' }, 'http://127.0.0.1:8080'],
    [{ HOST: '::', PORT: '3001' }, 'http://127.0.0.1:3001'],
    [{ HOST: '::1', PORT: '3002' }, 'http://[::1]:3002'],
    [{ HOST: 'api.internal', PORT: '80' }, 'http://api.internal:80']
  ]
  for (const [i, [where, origin]] of cases.entries()) {
    const env = { DATABASE_URL: `sqlite:${join(dir, `p${i}.db`)}`, ...where }
    const stores = await openStores(loadConfig(env), { migrate: true })
    const { record } = await createKeyAdmin(stores.keys, { now: () => Date.now() }).create({ role: 'customer', plan: 'free' })
    const io = memoryIo(env)
    assert.equal(await keysCommand(['portal-link', String(record.id)], io), 0)
    // The link works: it opens a session as the key.
    const url = io.lines[0]!
    assert.ok(url.startsWith(`${origin}/portal#link=`), url)
    const portal = createPortal(stores.portal, stores.keys, { now: () => Date.now() })
    assert.equal((await portal.exchange(url.split('#link=')[1]!)).view.keyId, record.id)
    assert.match(io.errors.join('\n'), new RegExp(`HOST and PORT \\(${origin.replace(/[.[\]]/g, '\\$&')}\\); give --base-url`))
    await stores.close()
  }
})

test('the prune job deletes ended sessions and links kept past a day, and no live session', async (t) => {
  const { stores } = await buildTestApp(t)
  const clock = manualClock(T0)
  const admin = createKeyAdmin(stores.keys, clock)
  const { record } = await admin.create({ role: 'customer', plan: 'free' })
  const portal = createPortal(stores.portal, stores.keys, clock)
  const old = await portal.exchange((await portal.makeLink(record.id, 'http://x')).url.split('#link=')[1]!)
  clock.advance(SESSION_IDLE_MS - 60_000)
  const live = await portal.exchange((await portal.makeLink(record.id, 'http://x')).url.split('#link=')[1]!)
  clock.advance(2 * 60_000)
  // The first is idle past the hour; the second was opened 2 minutes ago.
  const job = portalSessionsPruneJob({ portalSessions: portal })
  assert.equal(await job.run(), 1)
  await assert.rejects(portal.session(old.token), { code: 'portal_session_ended' })
  assert.equal((await portal.session(live.token)).keyId, record.id)
  clock.advance(LINK_KEPT_MS + 15 * 60_000)
  // Both links (used) are past their expiry by a day; the live session is now idle too.
  assert.equal(await job.run(), 3)
})
