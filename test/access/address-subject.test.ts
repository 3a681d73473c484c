// Callers without a valid key are charged by address: IPv4 alone, IPv6 by its /64.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { subjectOfAddress } from '../../src/access/client-subject.ts'
import { buildTestApp } from '../helpers/app.ts'

test('subjectOfAddress: an IPv4 address stands alone, an IPv6 address counts by its /64, a mapped IPv4 is IPv4', () => {
  assert.equal(subjectOfAddress('192.0.2.7'), 'ip:192.0.2.7')
  assert.equal(subjectOfAddress('::ffff:192.0.2.7'), 'ip:192.0.2.7')
  assert.equal(subjectOfAddress('2001:db8:aa:bb:1:2:3:4'), 'ip6:2001:db8:aa:bb::/64')
  assert.equal(subjectOfAddress('2001:DB8:AA:BB:ffff::1'), 'ip6:2001:db8:aa:bb::/64')
  assert.equal(subjectOfAddress('2001:0db8:00aa:00bb::'), 'ip6:2001:db8:aa:bb::/64')
  assert.equal(subjectOfAddress('2001:db8::1'), 'ip6:2001:db8:0:0::/64')
  assert.equal(subjectOfAddress('fe80::1%eth0'), 'ip6:fe80:0:0:0::/64')
  assert.equal(subjectOfAddress('::1'), 'ip6:0:0:0:0::/64')
  assert.notEqual(subjectOfAddress('2001:db8:aa:bb::1'), subjectOfAddress('2001:db8:aa:bc::1'))
})

test('anonymous requests from 61 addresses of one IPv6 /64 share the free minute quota: the 61st is 429', async (t) => {
  const { app } = await buildTestApp(t)
  const statuses: number[] = []
  for (let i = 1; i <= 61; i++) {
    const res = await app.inject({ method: 'GET', url: '/v1/pets', remoteAddress: `2001:db8:1:2::${i.toString(16)}` })
    statuses.push(res.statusCode)
  }
  assert.deepEqual(statuses.slice(0, 60), new Array(60).fill(401))
  assert.equal(statuses[60], 429)
  // Another /64 has its own quota.
  assert.equal((await app.inject({ method: 'GET', url: '/v1/pets', remoteAddress: '2001:db8:1:3::1' })).statusCode, 401)
})
