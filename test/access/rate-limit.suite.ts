// The rate-limit suite (docs/product.md section 4, and 9 for rotated keys): per-key quotas, the
// minute and day windows, 429 with Retry-After and the windows, the free GET /rate_limit,
// escalation to bans and their record, one quota for the keys of a rotation. Declared once and
// run through each door of the API: REST by test/access/access.http.test.ts, MCP tool calls by
// test/mcp/rate-limit.mcp.http.test.ts (test/helpers/transport.ts), on both engines and both
// limiters (package.json). The calls of the keys under test go through the transport; arranging
// (keys, rotations) and the admin's checks go through REST (`call`), the same on both runs.
//
// Counting: over MCP a session's opening (initialize) is one charged request of the key, so a
// case opens its callers first and counts what is left (`opening`): the same window is spent
// after the same number of charged requests on both doors. Over MCP a tool result has no
// headers: what REST asserts on a header, the MCP run asserts on the tool result (retryAfter, the
// windows) or on GET /v1/rate_limit (free on both), said at each place.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { AppError } from '../../src/errors.ts'
import { T0 } from '../helpers/app.ts'
import { buildTransportApp, type Answer, type Caller, type TransportApp, type TransportName } from '../helpers/transport.ts'

const iso = (ms: number): string => new Date(ms).toISOString()
const MINUTE_END = Date.UTC(2026, 10, 21, 12, 1) // T0 is 12:00:30
const DAY_END = Date.UTC(2026, 10, 22)
const BANNED_FOR = 15 * 60
const BAN_REASON = 'kept calling while rate limited: 21 requests before Retry-After had passed'

async function create (api: TransportApp, payload: Record<string, unknown>) {
  const res = await api.call({ method: 'POST', url: '/v1/admin/keys', payload })
  assert.equal(res.statusCode, 201, res.body)
  return res.json() as { id: number; key: string; expiresAt: string | null }
}

async function rotate (api: TransportApp, id: number, gracePeriodSeconds: number) {
  const res = await api.call({ method: 'POST', url: `/v1/admin/keys/${id}/rotate`, payload: { gracePeriodSeconds } })
  assert.equal(res.statusCode, 201, res.body)
  return res.json() as { id: number; key: string; ban: unknown }
}

/** GET /v1/rate_limit through the transport: costs nothing on either door. */
async function status (caller: Caller) {
  const res = await caller.send('getRateLimit')
  assert.equal(res.status, 200, JSON.stringify(res.body))
  return res.body as {
    plan: string
    role: string
    windows: Record<'minute' | 'day', { limit: number; remaining: number; reset: number }>
    ban: { until: string; reason: string } | null
  }
}

const codeOf = (res: Answer): string => (res.body as { code: string }).code

export function rateLimitSuite (transport: TransportName): void {
  const open = (
    t: Parameters<typeof buildTransportApp>[0],
    options?: Parameters<typeof buildTransportApp>[2]
  ) => buildTransportApp(t, transport, options)
  const name = (title: string): string => transport === 'rest' ? title : `over MCP: ${title}`

  test(name('free plan: the 61st request in a minute is 429 rate_limited with Retry-After and both windows'), async (t) => {
    const api = await open(t, { plan: 'free' })
    const me = api.caller(api.keys.customer)
    await me.open()
    const calls = 60 - api.opening
    for (let i = 1; i <= calls; i++) {
      const res = await me.send('listPets')
      assert.equal(res.status, 200, `request ${i}`)
      // REST: the headers of each answer. MCP (no headers): the same counts in GET /rate_limit.
      if (res.headers !== undefined) {
        assert.equal(res.headers['x-ratelimit-limit'], '60')
        assert.equal(res.headers['x-ratelimit-remaining'], String(calls - i))
        assert.equal(res.headers['x-ratelimit-reset'], String(MINUTE_END / 1000))
      }
      assert.deepEqual(
        (await status(me)).windows.minute,
        { limit: 60, remaining: calls - i, reset: MINUTE_END / 1000 },
        `request ${i}`
      )
    }
    const refused = await me.send('listPets')
    assert.equal(refused.status, 429)
    assert.equal(codeOf(refused), 'rate_limited')
    // REST reads these from Retry-After and RateLimit; MCP from the tool result.
    assert.equal(refused.retryAfter, 30)
    assert.deepEqual(refused.windows, { minute: { remaining: 0, reset: 30 }, day: { remaining: 940, reset: 43170 } })
    assert.equal(refused.exhaustedWindow, 'minute')
    if (refused.headers !== undefined) {
      assert.equal(refused.headers['retry-after'], '30')
      assert.equal(refused.headers['x-ratelimit-remaining'], '0')
      assert.equal(refused.headers['ratelimit-policy'], '"minute";q=60;w=60, "day";q=1000;w=86400')
      assert.equal(refused.headers.ratelimit, '"minute";r=0;t=30, "day";r=940;t=43170')
    }
    // The policy (RateLimit-Policy over REST) is in GET /rate_limit on both doors.
    const { windows } = await status(me)
    assert.deepEqual([windows.minute.limit, windows.day.limit], [60, 1000])
    api.clock.set(MINUTE_END)
    const next = await me.send('listPets')
    assert.equal(next.status, 200)
    if (next.headers !== undefined) assert.equal(next.headers['x-ratelimit-remaining'], '59')
    assert.equal((await status(me)).windows.minute.remaining, 59)
  })

  test(name('the day quota: once the day window is spent the answer is 429 rate_limited until midnight UTC, whatever the minute says'), async (t) => {
    const api = await open(t)
    const { key } = await api.makeKey('customer', 'enterprise', { perMinute: 5, perDay: 8 })
    const me = api.caller(key)
    await me.open()
    for (let i = 0; i < 5 - api.opening; i++) assert.equal((await me.send('listPets')).status, 200)
    assert.equal((await me.send('listPets')).exhaustedWindow, 'minute')
    api.clock.advance(60_000) // 12:01:30: a new minute, 3 of the day's 8 left
    for (let i = 0; i < 3; i++) assert.equal((await me.send('listPets')).status, 200, `request ${i} of the second minute`)
    const refused = await me.send('listPets')
    assert.equal(refused.status, 429)
    assert.equal(codeOf(refused), 'rate_limited')
    assert.equal(refused.retryAfter, (DAY_END - (T0 + 60_000)) / 1000)
    assert.deepEqual(refused.windows, {
      minute: { remaining: 2, reset: 30 },
      day: { remaining: 0, reset: (DAY_END - (T0 + 60_000)) / 1000 }
    })
    assert.equal(refused.exhaustedWindow, 'day')
    assert.deepEqual((await status(me)).windows.day, { limit: 8, remaining: 0, reset: DAY_END / 1000 })
    api.clock.advance(60_000)
    assert.equal((await me.send('listPets')).status, 429, 'a new minute does not help')
    api.clock.set(DAY_END)
    assert.equal((await me.send('listPets')).status, 200)
    assert.equal((await status(me)).windows.day.remaining, 7)
  })

  test(name('GET /v1/rate_limit costs nothing and reports plan, role, both windows and the ban'), async (t) => {
    const api = await open(t, { plan: 'pro' })
    const me = api.caller(api.keys.customer)
    await me.open()
    await me.send('listPets')
    const a = await me.send('getRateLimit')
    const b = await me.send('getRateLimit')
    assert.equal(a.status, 200)
    const spent = 1 + api.opening
    assert.deepEqual(a.body, {
      plan: 'pro', role: 'customer',
      windows: {
        minute: { limit: 300, remaining: 300 - spent, reset: MINUTE_END / 1000 },
        day: { limit: 10000, remaining: 10000 - spent, reset: DAY_END / 1000 }
      },
      ban: null
    })
    assert.deepEqual(b.body, a.body)
  })

  test(name('a key that keeps calling after 429 is banned on the 21st refused request, recorded, and lifted by an admin'), async (t) => {
    const api = await open(t)
    const { id, key } = await api.makeKey('customer', 'free')
    const me = api.caller(key)
    await me.open()
    for (let i = 0; i < 60 - api.opening; i++) assert.equal((await me.send('listPets')).status, 200)
    const codes: string[] = []
    for (let i = 1; i <= 21; i++) codes.push(codeOf(await me.send('listPets')))
    assert.deepEqual(codes, [...Array(20).fill('rate_limited'), 'api_key_banned'])
    const banned = await me.send('listCategories')
    assert.equal(banned.status, 429)
    assert.equal(codeOf(banned), 'api_key_banned')
    assert.equal(banned.retryAfter, BANNED_FOR) // REST: the Retry-After header; MCP: the tool result's retryAfter
    const record = await api.stores.keys.activeBan(id, api.clock.now())
    assert.ok(record !== null)
    assert.equal(record.endsAt - record.startedAt, BANNED_FOR * 1000)
    assert.equal((await status(me)).ban?.until, iso(record.endsAt), 'GET /rate_limit answers while banned')
    assert.equal((await api.call({ method: 'GET', url: `/v1/admin/keys/${id}` })).json().ban.until, iso(record.endsAt))

    assert.equal((await api.call({ method: 'DELETE', url: `/v1/admin/keys/${id}/ban` })).statusCode, 204)
    assert.equal(await api.stores.keys.activeBan(id, api.clock.now()), null)
    // The ban is gone at once; the minute window is still spent, so the answer is rate_limited.
    const after = await me.send('listPets')
    assert.equal(codeOf(after), 'rate_limited')
    assert.equal(after.exhaustedWindow, 'minute')
    api.clock.advance(60_000)
    assert.equal((await me.send('listPets')).status, 200)
  })

  // Fault caught: a failed ban record turned the 429 into a 503, and the ban's record was lost.
  test(name('a ban whose record in the database fails still answers 429 api_key_banned, stays in force, and is recorded on a later request'), async (t) => {
    const api = await open(t)
    const { id, key } = await api.makeKey('customer', 'free')
    const record = api.stores.keys.recordBan.bind(api.stores.keys)
    let failing = true
    api.stores.keys.recordBan = async (ban) => {
      if (failing) throw new AppError('service_unavailable', 'the database is unavailable')
      return record(ban)
    }
    const me = api.caller(key)
    await me.open()
    for (let i = 0; i < 60 - api.opening; i++) await me.send('listPets')
    const codes: string[] = []
    for (let i = 1; i <= 21; i++) codes.push(codeOf(await me.send('listPets')))
    assert.deepEqual(codes, [...Array(20).fill('rate_limited'), 'api_key_banned'])
    assert.equal(await api.stores.keys.activeBan(id, api.clock.now()), null, 'not recorded yet')
    api.clock.advance(61_000) // the minute window reset: only the ban refuses now
    const banned = await me.send('listPets')
    assert.equal(banned.status, 429)
    assert.equal(codeOf(banned), 'api_key_banned')

    failing = false
    api.clock.advance(5000) // the retry interval: the next charged request records it
    assert.equal(codeOf(await me.send('listPets')), 'api_key_banned')
    // Recorded after the answer, in the background: on PostgreSQL under load that takes a few
    // round trips, so wait for it by the wall clock (at most 5 s), not by a count of turns.
    let recorded = await api.stores.keys.activeBan(id, api.clock.now())
    for (const until = Date.now() + 5000; recorded === null && Date.now() < until;) {
      await new Promise((resolve) => setTimeout(resolve, 10))
      recorded = await api.stores.keys.activeBan(id, api.clock.now())
    }
    assert.ok(recorded !== null, 'the ban is recorded once the database answers')
    assert.equal(recorded.endsAt - recorded.startedAt, BANNED_FOR * 1000)
  })

  test(name('an enterprise key gets exactly its custom quota'), async (t) => {
    const api = await open(t)
    const { key } = await api.makeKey('customer', 'enterprise', { perMinute: 3, perDay: 100 })
    const me = api.caller(key)
    await me.open()
    const statuses = []
    for (let i = 0; i < 4 - api.opening; i++) statuses.push((await me.send('listPets')).status)
    assert.deepEqual(statuses, [...Array(3 - api.opening).fill(200), 429])
  })

  test(name('during the grace period both keys of a rotation work and share one minute and day quota; after it the old key answers api_key_expired'), async (t) => {
    const api = await open(t)
    const old = await create(api, { role: 'customer', plan: 'enterprise', perMinute: 10, perDay: 15 })
    const before = api.caller(old.key)
    await before.open()
    // The old key is in this instance's key cache when it is rotated.
    assert.equal((await before.send('listPets')).status, 200)
    assert.equal((await status(before)).windows.minute.remaining, 9 - api.opening)
    const successor = await rotate(api, old.id, 120)
    const after = api.caller(successor.key)
    await after.open() // over MCP, charged to the one identity of both keys
    const left = (await status(after)).windows.minute.remaining
    assert.equal(left, 9 - 2 * api.opening)
    const remaining: number[] = []
    for (let i = 0; i < left; i++) {
      const caller = i % 2 === 0 ? after : before
      const res = await caller.send('listPets')
      assert.equal(res.status, 200, `request ${i}`)
      remaining.push((await status(caller)).windows.minute.remaining)
    }
    assert.deepEqual(remaining, Array.from({ length: left }, (_, i) => left - 1 - i), 'one minute window for both keys')
    for (const caller of [before, after]) {
      const res = await caller.send('listPets')
      assert.equal(res.status, 429)
      assert.equal(codeOf(res), 'rate_limited')
    }
    // The next minute: the day window (15) is shared too: 5 left between them.
    api.clock.advance(60_000)
    const day: number[] = []
    for (let i = 0; i < 6; i++) day.push((await (i % 2 === 0 ? before : after).send('listPets')).status)
    assert.deepEqual(day, [200, 200, 200, 200, 200, 429])
    // After the grace period (120 s from the rotation) the old key stops; the new one goes on.
    // Over MCP the endpoint itself refuses the key, with the same 401 and error object as REST.
    api.clock.set(T0 + 120_000)
    const expired = await before.send('listPets')
    assert.equal(expired.status, 401)
    assert.equal(codeOf(expired), 'api_key_expired')
    assert.equal((expired.body as { message: string }).message, `the API key expired at ${iso(T0 + 120_000)}; use the key that replaced it, or ask an admin for a new one`)
    assert.equal((await status(after)).windows.day.remaining, 0)
  })

  test(name('a ban covers both keys of a rotation: started through either, shown on both views, kept by a rotation made during it, lifted through either'), async (t) => {
    const api = await open(t)
    const old = await create(api, { role: 'customer', plan: 'free' })
    const successor = await rotate(api, old.id, 3600)
    const callers = [api.caller(old.key), api.caller(successor.key)] as const
    for (const caller of callers) await caller.open()
    for (let i = 0; i < 60 - 2 * api.opening; i++) assert.equal((await callers[i % 2]!.send('listPets')).status, 200)
    // 20 refusals alternate between the keys; the 21st, through the old key, starts the ban.
    const codes: string[] = []
    for (let i = 0; i < 21; i++) codes.push(codeOf(await callers[i % 2]!.send('listPets')))
    assert.deepEqual(codes, [...Array(20).fill('rate_limited'), 'api_key_banned'])
    for (const caller of callers) {
      const res = await caller.send('listCategories')
      assert.equal(codeOf(res), 'api_key_banned')
      assert.equal(res.retryAfter, BANNED_FOR) // REST: the Retry-After header; MCP: the tool result's retryAfter
    }
    const until = iso(T0 + BANNED_FOR * 1000)
    for (const id of [old.id, successor.id]) {
      assert.deepEqual((await api.call({ method: 'GET', url: `/v1/admin/keys/${id}` })).json().ban, { until, reason: BAN_REASON })
    }
    // Rotating the banned successor does not shed the ban: its own successor is banned too
    // (over MCP its first session is refused, with the same answer).
    const third = await rotate(api, successor.id, 60)
    assert.deepEqual(third.ban, { until, reason: BAN_REASON })
    const latest = api.caller(third.key)
    assert.equal(codeOf(await latest.send('listPets')), 'api_key_banned')
    // Lifting it through the old key lifts it for all three (the minute is still spent).
    assert.equal((await api.call({ method: 'DELETE', url: `/v1/admin/keys/${old.id}/ban` })).statusCode, 204)
    for (const caller of [...callers, latest]) assert.equal(codeOf(await caller.send('listPets')), 'rate_limited')
    for (const id of [old.id, successor.id, third.id]) {
      assert.equal((await api.call({ method: 'GET', url: `/v1/admin/keys/${id}` })).json().ban, null)
    }
  })
}
