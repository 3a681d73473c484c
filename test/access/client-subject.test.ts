// The limiter subject of a caller without a valid key (src/access/client-subject.ts), at the
// edges of IPv6 notation: a gap that ends inside the /64, a mapped prefix without an IPv4 tail,
// an embedded IPv4 that is not a mapped one. Written against the survivors of
// `npm run mutate -- access` (docs/testing.md); the common forms are in address-subject.test.ts.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { subjectOfAddress } from '../../src/access/client-subject.ts'

test('subjectOfAddress fills a :: gap with exactly the groups it stands for, even when the /64 ends past it', () => {
  assert.equal(subjectOfAddress('2001::1:2:3:4:5:6'), 'ip6:2001:0:1:2::/64')
  assert.equal(subjectOfAddress('1::2:3:4:5:6:7'), 'ip6:1:0:2:3::/64')
  assert.equal(subjectOfAddress('1::2'), 'ip6:1:0:0:0::/64')
  assert.equal(subjectOfAddress('::'), 'ip6:0:0:0:0::/64')
  assert.equal(subjectOfAddress('fe80:1:2:3:4:5:6:7%eth0'), 'ip6:fe80:1:2:3::/64', 'a zone index rides on the last group')
  assert.equal(subjectOfAddress('2001:db8:1::5:6:7'), 'ip6:2001:db8:1:0::/64')
  assert.equal(subjectOfAddress('::2:3:4:5:6:7:8'), 'ip6:0:2:3:4::/64')
  assert.equal(subjectOfAddress('1:2:3:4:5:6:7::'), 'ip6:1:2:3:4::/64')
})

test('subjectOfAddress: only ::ffff: with a dotted tail is an IPv4 address; other IPv6 addresses count by their /64', () => {
  assert.equal(subjectOfAddress('::FFFF:192.0.2.7'), 'ip:192.0.2.7')
  assert.equal(subjectOfAddress('::ffff:c000:207'), 'ip6:0:0:0:0::/64', 'the mapped prefix written in hex groups')
  assert.equal(subjectOfAddress('64:ff9b::192.0.2.7'), 'ip6:64:ff9b:0:0::/64', 'NAT64: a dotted tail, not a mapped address')
})
