// The client address behind a load balancer (TRUST_PROXY): only the address the nearest trusted
// proxy saw counts, never what a client writes into X-Forwarded-For (docs/product.md section 4).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { loadConfig, ConfigError } from '../../src/config.ts'
import { buildTestApp } from '../helpers/app.ts'

const PROXY = '10.0.0.2'
const ATTACKER = '203.0.113.7'
const VICTIM = '198.51.100.9'

for (const trust of ['true', '1', PROXY, '10.0.0.0/24']) {
  test(`TRUST_PROXY=${trust}: rotating X-Forwarded-For escapes nothing, anonymous calls get 429 after 60`, async (t) => {
    const { app } = await buildTestApp(t, { env: { TRUST_PROXY: trust } })
    const statuses: number[] = []
    for (let i = 0; i < 70; i++) {
      // The proxy appends the address it saw; what the client sent stays on the left.
      const res = await app.inject({ method: 'GET', url: '/v1/pets', remoteAddress: PROXY, headers: { 'x-forwarded-for': `192.0.2.${i}, 10.9.${i}.1, ${ATTACKER}` } })
      statuses.push(res.statusCode)
    }
    assert.deepEqual(statuses, [...Array(60).fill(401), ...Array(10).fill(429)])
  })

  test(`TRUST_PROXY=${trust}: writing someone else's address into X-Forwarded-For gets the writer banned, not them`, async (t) => {
    const { app } = await buildTestApp(t, { env: { TRUST_PROXY: trust } })
    const codes: string[] = []
    for (let i = 0; i < 81; i++) {
      const res = await app.inject({ method: 'GET', url: '/v1/pets', remoteAddress: PROXY, headers: { 'x-forwarded-for': `${VICTIM}, ${ATTACKER}` } })
      codes.push(res.json().code)
    }
    assert.deepEqual(codes, [...Array(60).fill('unauthenticated'), ...Array(20).fill('rate_limited'), 'address_banned'])
    const victim = await app.inject({ method: 'GET', url: '/v1/pets', remoteAddress: PROXY, headers: { 'x-forwarded-for': VICTIM } })
    assert.equal(victim.statusCode, 401)
    assert.equal(victim.headers['x-ratelimit-remaining'], '59', 'the victim\'s own, untouched count')
  })
}

test('without TRUST_PROXY, X-Forwarded-For is ignored: the socket address is the client', async (t) => {
  const { app } = await buildTestApp(t)
  for (let i = 0; i < 60; i++) await app.inject({ method: 'GET', url: '/v1/pets', remoteAddress: ATTACKER, headers: { 'x-forwarded-for': `192.0.2.${i}` } })
  const res = await app.inject({ method: 'GET', url: '/v1/pets', remoteAddress: ATTACKER, headers: { 'x-forwarded-for': VICTIM } })
  assert.equal(res.statusCode, 429)
})

test('a proxy list trusts only those proxies: a client that connects directly cannot name another address', async (t) => {
  const { app } = await buildTestApp(t, { env: { TRUST_PROXY: PROXY } })
  for (let i = 0; i < 60; i++) await app.inject({ method: 'GET', url: '/v1/pets', remoteAddress: ATTACKER, headers: { 'x-forwarded-for': `192.0.2.${i}` } })
  const res = await app.inject({ method: 'GET', url: '/v1/pets', remoteAddress: ATTACKER, headers: { 'x-forwarded-for': VICTIM } })
  assert.equal(res.statusCode, 429)
})

test('TRUST_PROXY accepts false, true (1 hop), a hop count, addresses and CIDRs; anything else stops the start with one line', () => {
  const of = (value: string) => loadConfig({ TRUST_PROXY: value }).trustProxy
  assert.equal(of(''), false)
  assert.equal(of('false'), false)
  assert.equal(of('0'), false)
  assert.equal(of('true'), 1)
  assert.equal(of('2'), 2)
  assert.deepEqual(of('10.0.0.5, 10.1.0.0/16,::1,fd00::/8,loopback'), ['10.0.0.5', '10.1.0.0/16', '::1', 'fd00::/8', 'loopback'])
  for (const bad of ['yes', '*', '10.0.0.300', '10.0.0.0/33', 'fd00::/129', '99', 'all']) {
    assert.throws(
      () => loadConfig({ TRUST_PROXY: bad }),
      (error: unknown) => error instanceof ConfigError
        && /^TRUST_PROXY must be|^TRUST_PROXY hop count/.test(error.problems[0] ?? ''),
      bad
    )
  }
})
