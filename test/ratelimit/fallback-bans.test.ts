// The fallback limiter's ban bookkeeping (src/ratelimit/fallback.ts): bans in force wherever the
// limiter answers from, the reload claims of needsBans, restoreBan into both stores, and the
// failure text of describeFailure. In process: the primary is a memory limiter behind a switch.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createFallbackRateLimiter, describeFailure, RETRY_INTERVAL_MS } from '../../src/ratelimit/fallback.ts'
import type { FallbackStatus } from '../../src/ratelimit/fallback.ts'
import { createMemoryRateLimiter } from '../../src/ratelimit/memory.ts'
import type { Decision, Quota, RateLimiter } from '../../src/ratelimit/limiter.ts'
import { START } from './contract.ts'

const MINUTE = 60_000
const TIGHT: Quota = { perMinute: 1, perDay: 100 }
const BAN = { startedAt: START - MINUTE, until: START + 14 * MINUTE }

interface Switch {
  down: boolean
  /** Whether the primary's store says it lost its bans (needsBans answers this, once). */
  lost: boolean
  calls: string[]
}

/** A primary over its own memory limiter that rejects every call while `down`. */
function switchedPrimary (
  now: () => number,
  options: { restoreBan?: boolean; needsBans?: boolean } = {}
): { primary: RateLimiter; inner: ReturnType<typeof createMemoryRateLimiter>; control: Switch } {
  const inner = createMemoryRateLimiter({ now })
  const control: Switch = { down: false, lost: false, calls: [] }
  const guard = async <T>(name: string, call: () => T | Promise<T>): Promise<T> => {
    control.calls.push(name)
    if (control.down) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' })
    return await call()
  }
  const primary: RateLimiter = {
    consume: (s, q) => guard('consume', () => inner.consume(s, q)),
    peek: (s, q) => guard('peek', () => inner.peek(s, q)),
    unban: (s) => guard('unban', () => inner.unban(s)),
    close: () => inner.close()
  }
  if (options.restoreBan !== false) primary.restoreBan = (s, ban) => guard('restoreBan', () => inner.restoreBan!(s, ban))
  if (options.needsBans !== false) {
    primary.needsBans = () => guard('needsBans', () => {
      const lost = control.lost
      control.lost = false
      return lost
    })
  }
  return { primary, inner, control }
}

void test('fallback: a ban the primary reports is copied into the fallback, so a fall-back keeps enforcing it', async () => {
  let now = START
  const clock = (): number => now
  const { primary, control } = switchedPrimary(clock)
  const fallback = createMemoryRateLimiter({ now: clock })
  const limiter = createFallbackRateLimiter({ primary, fallback, now: clock })
  let d: Decision
  do d = await limiter.consume('key:1', TIGHT)
  while (!d.banStarted)
  const ban = d.ban!
  assert.deepEqual(fallback.peek('key:1', TIGHT).ban, ban)

  control.down = true
  now += MINUTE
  const during = await limiter.consume('key:1', TIGHT)
  assert.deepEqual([limiter.state().status, during.code, during.ban?.until], ['degraded', 'api_key_banned', ban.until])
})

void test('fallback: a ban only the fallback holds (the primary lost it) is answered, by consume and by peek', async () => {
  const clock = (): number => START
  const { primary, inner } = switchedPrimary(clock)
  const fallback = createMemoryRateLimiter({ now: clock })
  await fallback.restoreBan!('key:1', BAN)
  const limiter = createFallbackRateLimiter({ primary, fallback, now: clock })

  const consumed = await limiter.consume('key:1', TIGHT)
  assert.deepEqual([consumed.code, consumed.ban?.until, consumed.ban?.startedAt], ['api_key_banned', BAN.until, BAN.startedAt])
  assert.equal(inner.peek('key:1', TIGHT).minute.remaining, 0) // the primary itself counted the request
  const peeked = await limiter.peek('key:1', TIGHT)
  assert.deepEqual([peeked.code, peeked.ban?.until], ['api_key_banned', BAN.until])
  // Another subject is not touched by the held ban.
  assert.equal((await limiter.consume('key:2', TIGHT)).allowed, true)
})

void test('fallback: the request that would start a ban (peek: api_key_banned without a ban) is answered as the primary says, not replaced by the fallback\'s view', async () => {
  const clock = (): number => START
  const { primary } = switchedPrimary(clock)
  const fallback = createMemoryRateLimiter({ now: clock })
  const limiter = createFallbackRateLimiter({ primary, fallback, now: clock })
  for (let i = 0; i < 21; i++) await limiter.consume('key:1', TIGHT) // 1 allowed, 20 strikes
  let fallbackPeeks = 0
  const peek = fallback.peek.bind(fallback)
  fallback.peek = (s, q) => { fallbackPeeks++; return peek(s, q) }
  const d = await limiter.peek('key:1', TIGHT)
  assert.deepEqual([d.code, d.ban, fallbackPeeks], ['api_key_banned', null, 0])
  // An ordinary refusal does look at the fallback (which holds no ban): the answer stays the primary's.
  const refused = await limiter.peek('key:2', { perMinute: 0, perDay: 0 })
  assert.deepEqual([refused.code, fallbackPeeks], ['rate_limited', 1])
})

void test('fallback: while degraded the fallback\'s own answer is final (it is not asked twice)', async () => {
  const clock = (): number => START
  const { primary, control } = switchedPrimary(clock)
  control.down = true
  const fallback = createMemoryRateLimiter({ now: clock })
  const limiter = createFallbackRateLimiter({ primary, fallback, now: clock })
  let peeks = 0
  const peek = fallback.peek.bind(fallback)
  fallback.peek = (s, q) => { peeks++; return peek(s, q) }
  await limiter.consume('key:1', TIGHT)
  await limiter.consume('key:1', TIGHT)
  assert.equal(peeks, 0)
})

void test('fallback: restoreBan puts the ban into both stores while the primary answers', async () => {
  const clock = (): number => START
  const { primary, inner } = switchedPrimary(clock)
  const fallback = createMemoryRateLimiter({ now: clock })
  const limiter = createFallbackRateLimiter({ primary, fallback, now: clock })
  await limiter.restoreBan!('key:1', BAN)
  assert.equal(fallback.peek('key:1', TIGHT).ban?.until, BAN.until)
  assert.equal(inner.peek('key:1', TIGHT).ban?.until, BAN.until)
  assert.equal(await limiter.needsBans!(), false) // nothing was missed
})

void test('fallback: a ban restored while degraded, or refused by the primary, makes the next needsBans reload once the primary answers', async () => {
  let now = START
  const clock = (): number => now
  const { primary, inner, control } = switchedPrimary(clock)
  const fallback = createMemoryRateLimiter({ now: clock })
  const changes: FallbackStatus[] = []
  const limiter = createFallbackRateLimiter({ primary, fallback, now: clock, onStateChange: (s) => changes.push(s) })

  // Refused by the primary: the limiter falls back, the fallback holds the ban.
  control.down = true
  await limiter.restoreBan!('key:1', BAN)
  assert.deepEqual([limiter.state().status, changes], ['degraded', ['degraded']])
  assert.equal(fallback.peek('key:1', TIGHT).ban?.until, BAN.until)
  assert.equal(inner.peek('key:1', TIGHT).ban, null)
  // Degraded: the fallback needs the bans once (it was just fallen back to), then no more.
  assert.equal(await limiter.needsBans!(), true)
  assert.equal(await limiter.needsBans!(), false)
  // While degraded, restoreBan does not try the primary at all.
  control.calls.length = 0
  await limiter.restoreBan!('key:2', BAN)
  assert.deepEqual(control.calls, [])

  // The primary is back: needsBans asks it, and reloads because bans missed it, though it lost nothing.
  control.down = false
  now += RETRY_INTERVAL_MS
  await limiter.consume('key:3', TIGHT)
  assert.equal(limiter.state().status, 'ok')
  assert.equal(await limiter.needsBans!(), true)
  assert.equal(await limiter.needsBans!(), false)
})

void test('fallback: a ban the primary refused (the only one missed) makes the first needsBans after recovery reload', async () => {
  let now = START
  const clock = (): number => now
  const { primary, control } = switchedPrimary(clock)
  const limiter = createFallbackRateLimiter({ primary, fallback: createMemoryRateLimiter({ now: clock }), now: clock })
  control.down = true
  await limiter.restoreBan!('key:1', BAN)
  control.down = false
  now += RETRY_INTERVAL_MS
  await limiter.consume('key:2', TIGHT)
  assert.equal(limiter.state().status, 'ok')
  assert.equal(await limiter.needsBans!(), true)
})

void test('fallback: needsBans follows the primary\'s answer while ok, and a failing needsBans falls back and asks for a reload', async () => {
  let now = START
  const clock = (): number => now
  const { primary, control } = switchedPrimary(clock)
  const fallback = createMemoryRateLimiter({ now: clock })
  const limiter = createFallbackRateLimiter({ primary, fallback, now: clock })
  assert.equal(await limiter.needsBans!(), false)
  control.lost = true
  assert.equal(await limiter.needsBans!(), true)
  assert.equal(await limiter.needsBans!(), false)

  control.down = true
  assert.equal(await limiter.needsBans!(), true)
  assert.equal(limiter.state().status, 'degraded')
  assert.equal(await limiter.needsBans!(), false)

  // While degraded, needsBans does not ask the primary (so cannot end the fall-back); a request
  // does, and the next fall-back asks for the bans again.
  control.down = false
  now += RETRY_INTERVAL_MS
  control.calls.length = 0
  assert.equal(await limiter.needsBans!(), false)
  assert.deepEqual([control.calls, limiter.state().status], [[], 'degraded'])
  await limiter.consume('key:1', TIGHT)
  assert.equal(await limiter.needsBans!(), false)
  control.down = true
  await limiter.consume('key:1', TIGHT)
  assert.equal(limiter.state().status, 'degraded')
  assert.equal(await limiter.needsBans!(), true)
})

void test('fallback: an unban that reaches the primary while degraded marks the state ok', async () => {
  const clock = (): number => START
  const { primary, control } = switchedPrimary(clock)
  const changes: FallbackStatus[] = []
  const limiter = createFallbackRateLimiter({
    primary,
    fallback: createMemoryRateLimiter({ now: clock }),
    now: clock,
    onStateChange: (s) => changes.push(s)
  })
  control.down = true
  await limiter.consume('key:1', TIGHT)
  control.down = false
  await limiter.unban('key:1') // an unban is sent to the primary even while degraded
  assert.deepEqual([limiter.state(), changes], [{ status: 'ok' }, ['degraded', 'ok']])
})

void test('fallback: a primary without restoreBan or needsBans: bans go to the fallback only, and needsBans answers false while ok', async () => {
  const clock = (): number => START
  const { primary, control } = switchedPrimary(clock, { restoreBan: false, needsBans: false })
  const fallback = createMemoryRateLimiter({ now: clock })
  const limiter = createFallbackRateLimiter({ primary, fallback, now: clock })
  await limiter.restoreBan!('key:1', BAN)
  assert.equal(fallback.peek('key:1', TIGHT).ban?.until, BAN.until)
  assert.deepEqual(control.calls, [])
  assert.equal(await limiter.needsBans!(), false)
  assert.equal(limiter.state().status, 'ok')
})

void test('fallback: a primary without restoreBan is not marked as missing bans while degraded', async () => {
  let now = START
  const clock = (): number => now
  const { primary, control } = switchedPrimary(clock, { restoreBan: false })
  const limiter = createFallbackRateLimiter({ primary, fallback: createMemoryRateLimiter({ now: clock }), now: clock })
  control.down = true
  await limiter.consume('key:1', TIGHT)
  assert.equal(await limiter.needsBans!(), true) // the fallback's own reload
  await limiter.restoreBan!('key:2', BAN)
  control.down = false
  now += RETRY_INTERVAL_MS
  await limiter.consume('key:1', TIGHT)
  assert.equal(await limiter.needsBans!(), false)
})

void test('fallback: close() closes both stores', async () => {
  const clock = (): number => START
  const { primary, inner } = switchedPrimary(clock)
  const fallback = createMemoryRateLimiter({ now: clock })
  await fallback.consume('key:1', TIGHT)
  await inner.consume('key:1', TIGHT)
  const limiter = createFallbackRateLimiter({ primary, fallback, now: clock })
  await limiter.close()
  assert.deepEqual([inner.size(), fallback.size()], [0, 0])
})

void test('fallback: while ok, check() probes on every call; a degraded probe that fails keeps the state and waits a whole interval', async () => {
  let now = START
  const clock = (): number => now
  const { primary } = switchedPrimary(clock)
  let up = true
  let probes = 0
  const limiter = createFallbackRateLimiter({
    primary,
    fallback: createMemoryRateLimiter({ now: clock }),
    now: clock,
    probe: async () => { probes++; if (!up) throw new Error('Connection is closed.') }
  })
  await limiter.check()
  await limiter.check()
  assert.equal(probes, 2)
  up = false
  assert.equal((await limiter.check()).status, 'degraded')
  now += RETRY_INTERVAL_MS
  assert.equal((await limiter.check()).status, 'degraded')
  assert.equal(probes, 4)
  up = true
  now += RETRY_INTERVAL_MS - 1
  assert.equal((await limiter.check()).status, 'degraded')
  assert.equal(probes, 4)
  now += 1
  assert.deepEqual(await limiter.check(), { status: 'ok' })
  // Back to ok, the next check probes again at once.
  await limiter.check()
  assert.equal(probes, 6)
})

void test('fallback: while a degraded check() probes, requests go to the fallback, not to the primary', async () => {
  let now = START
  const clock = (): number => now
  const { primary, control } = switchedPrimary(clock)
  let release: () => void = () => {}
  let up = false
  const limiter = createFallbackRateLimiter({
    primary,
    fallback: createMemoryRateLimiter({ now: clock }),
    now: clock,
    probe: async () => {
      if (!up) throw new Error('Connection is closed.')
      await new Promise<void>((resolve) => { release = resolve })
    }
  })
  await limiter.check()
  assert.equal(limiter.state().status, 'degraded')
  up = true
  now += RETRY_INTERVAL_MS
  const probing = limiter.check()
  control.calls.length = 0
  await limiter.consume('key:1', TIGHT)
  assert.deepEqual(control.calls, []) // the probe claimed the retry slot
  release()
  assert.deepEqual(await probing, { status: 'ok' })
})

void test('fallback: a primary that answers needsBans after a request failed meanwhile ends that fall-back', async () => {
  const clock = (): number => START
  const { primary, control } = switchedPrimary(clock)
  let release: (lost: boolean) => void = () => {}
  primary.needsBans = () => new Promise<boolean>((resolve) => { release = resolve })
  const limiter = createFallbackRateLimiter({ primary, fallback: createMemoryRateLimiter({ now: clock }), now: clock })
  const asking = limiter.needsBans!()
  control.down = true
  await limiter.consume('key:1', TIGHT)
  assert.equal(limiter.state().status, 'degraded')
  release(false)
  assert.equal(await asking, false)
  assert.equal(limiter.state().status, 'ok')
})

void test('fallback: an unban the primary refuses falls back as well as rejecting', async () => {
  const clock = (): number => START
  const { primary, control } = switchedPrimary(clock)
  const limiter = createFallbackRateLimiter({ primary, fallback: createMemoryRateLimiter({ now: clock }), now: clock })
  control.down = true
  await assert.rejects(limiter.unban('key:1'), /ECONNREFUSED/)
  assert.deepEqual(limiter.state(), { status: 'degraded', reason: 'rate limit store unavailable: connect ECONNREFUSED 127.0.0.1:6379' })
})

void test('fallback: a fallback without restoreBan still answers a ban the primary reports, and restoreBan still reaches the primary', async () => {
  const clock = (): number => START
  const { primary, inner } = switchedPrimary(clock)
  const memory = createMemoryRateLimiter({ now: clock })
  const fallback: RateLimiter = {
    consume: (s, q) => memory.consume(s, q),
    peek: (s, q) => memory.peek(s, q),
    unban: (s) => memory.unban(s),
    close: () => memory.close()
  }
  const limiter = createFallbackRateLimiter({ primary, fallback, now: clock })
  let d: Decision
  do d = await limiter.consume('key:1', TIGHT)
  while (!d.banStarted)
  assert.equal((await limiter.consume('key:1', TIGHT)).code, 'api_key_banned')
  await limiter.restoreBan!('key:2', BAN)
  assert.equal(inner.peek('key:2', TIGHT).ban?.until, BAN.until)
})

void test('describeFailure: the code leads unless the message names it; a bare code, a non-Error and an empty error still say something', () => {
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' })
  assert.equal(describeFailure(refused), 'rate limit store unavailable: connect ECONNREFUSED 127.0.0.1:6379')
  assert.equal(describeFailure(Object.assign(new Error(''), { code: 'ETIMEDOUT' })), 'rate limit store unavailable: ETIMEDOUT')
  assert.equal(describeFailure(Object.assign(new Error('  '), { code: 7 })), 'rate limit store unavailable: Error')
  assert.equal(describeFailure({ code: 'ENOTFOUND' }), 'rate limit store unavailable: ENOTFOUND: [object Object]')
  assert.equal(describeFailure(null), 'rate limit store unavailable: null')
  assert.equal(describeFailure('socket hang up'), 'rate limit store unavailable: socket hang up')
  assert.equal(describeFailure(''), 'rate limit store unavailable: unknown error')
  assert.equal(describeFailure(Object.assign(new Error('redis://x'), { name: 'ReplyError' })), 'rate limit store unavailable: ReplyError')
  assert.equal(describeFailure(new Error(' a  b ')), 'rate limit store unavailable: a  b')
})

void test('describeFailure: a reason of 120 characters is kept whole, a longer one is cut to 120 ending in an ellipsis', () => {
  const prefix = 'rate limit store unavailable: '
  const exact = 'x'.repeat(120 - prefix.length)
  assert.equal(describeFailure(new Error(exact)), prefix + exact)
  const long = describeFailure(new Error(`${exact}y`))
  assert.equal(long, `${prefix}${'x'.repeat(120 - prefix.length - 1)}…`)
  assert.equal(long.length, 120)
})
