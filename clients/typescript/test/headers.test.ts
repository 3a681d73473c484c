// The header readers of the client (src/headers.ts), one behaviour per test: each pins a fault
// that mutation testing showed the end-to-end tests would let through (docs/testing.md).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { deprecationDate, linksOf, rateLimitOf, secondsToReset } from '../src/headers.ts'

const headers = (init: Record<string, string>) => new Headers(init)

test('rateLimitOf reads X-RateLimit-Limit, -Remaining and -Reset as integers, spaces around them allowed', () => {
  assert.deepEqual(rateLimitOf(headers({ 'x-ratelimit-limit': '60', 'x-ratelimit-remaining': '  7  ', 'x-ratelimit-reset': '1767225600' })), { limit: 60, remaining: 7, reset: 1767225600 })
  assert.deepEqual(rateLimitOf(headers({ 'x-ratelimit-limit': '60', 'x-ratelimit-remaining': '-1', 'x-ratelimit-reset': '10' })), { limit: 60, remaining: -1, reset: 10 })
})

test('rateLimitOf is null when any of the three headers is missing', () => {
  const full = { 'x-ratelimit-limit': '60', 'x-ratelimit-remaining': '7', 'x-ratelimit-reset': '10' }
  for (const name of Object.keys(full)) {
    const some: Record<string, string> = { ...full }
    delete some[name]
    assert.equal(rateLimitOf(headers(some)), null, `without ${name}`)
  }
})

test('rateLimitOf is null when a header is not a whole number: a fraction, a prefix or suffix, a word, empty', () => {
  for (const bad of ['7.5', '7x', 'x7', 'seven', '', '--7', '7 7']) {
    assert.equal(rateLimitOf(headers({ 'x-ratelimit-limit': '60', 'x-ratelimit-remaining': bad, 'x-ratelimit-reset': '10' })), null, JSON.stringify(bad))
  }
})

test('secondsToReset is null without a RateLimit field, and null when no item has the remaining count asked for', () => {
  assert.equal(secondsToReset(headers({}), 5), null)
  assert.equal(secondsToReset(headers({ ratelimit: '"minute";r=42;t=18, "day";r=958;t=40213' }), 5), null)
})

test('secondsToReset takes t of the item whose r is the remaining count, spaces after the semicolons allowed', () => {
  assert.equal(secondsToReset(headers({ ratelimit: '"minute";r=42;t=18, "day";r=958;t=40213' }), 42), 18)
  assert.equal(secondsToReset(headers({ ratelimit: '"minute";r=42;t=18, "day";r=958;t=40213' }), 958), 40213)
  assert.equal(secondsToReset(headers({ ratelimit: '"minute"; r=3; t=25' }), 3), 25)
})

test('secondsToReset: when both windows have the remaining count, the later reset binds (the longer wait)', () => {
  assert.equal(secondsToReset(headers({ ratelimit: '"minute";r=0;t=18, "day";r=0;t=40213' }), 0), 40213)
  assert.equal(secondsToReset(headers({ ratelimit: '"day";r=0;t=40213, "minute";r=0;t=18' }), 0), 40213)
})

test('secondsToReset skips an item without t, and reads only whole digits of r and t', () => {
  assert.equal(secondsToReset(headers({ ratelimit: '"minute";r=4, "day";r=4;t=90' }), 4), 90)
  assert.equal(secondsToReset(headers({ ratelimit: '"minute";r=4;t=0' }), 4), 0)
  assert.equal(secondsToReset(headers({ ratelimit: '"minute";r=14;t=30' }), 14), 30)
  assert.equal(secondsToReset(headers({ ratelimit: '"minute";r=x;t=30' }), 0), null)
})

test('linksOf maps each relation to its target; null and a link without rel give nothing', () => {
  assert.deepEqual(linksOf(null), new Map())
  assert.deepEqual(linksOf('</v1/pets?cursor=abc>; rel="next", </v1/pets?id=3>; rel="successor-version"'), new Map([['next', '/v1/pets?cursor=abc'], ['successor-version', '/v1/pets?id=3']]))
  assert.deepEqual(linksOf('</a>; title="x"'), new Map())
  assert.deepEqual(linksOf('</a>; title="x", </b>; rel=next'), new Map([['next', '/b']]), 'an unquoted rel, after a link without one')
})

test('linksOf: rel is case-insensitive, may list several relations, takes other parameters around it, and the first link of a relation wins', () => {
  assert.deepEqual(linksOf('</a>;REL="next"'), new Map([['next', '/a']]))
  assert.deepEqual(linksOf('</a>; type="text/html" ;  rel=" next  last "; title="t"'), new Map([['next', '/a'], ['last', '/a']]))
  assert.deepEqual(linksOf('</first>; rel="next", </second>; rel="next"'), new Map([['next', '/first']]))
  assert.deepEqual(linksOf('<>; rel="self"'), new Map([['self', '']]))
})

test('deprecationDate reads @unix-seconds (RFC 9745), trimmed and negative too, and an HTTP-date; anything else is null', () => {
  assert.deepEqual(deprecationDate('@1767225600'), new Date('2026-01-01T00:00:00Z'))
  assert.deepEqual(deprecationDate('  @1767225600 '), new Date('2026-01-01T00:00:00Z'))
  assert.deepEqual(deprecationDate('@-86400'), new Date('1969-12-31T00:00:00Z'))
  assert.deepEqual(deprecationDate('Fri, 21 May 2027 00:00:00 GMT'), new Date('2027-05-21T00:00:00Z'))
  assert.equal(deprecationDate('soon'), null)
  assert.equal(deprecationDate('@12x'), null)
})

test('linksOf: spaces between the target and its first parameter are allowed, as RFC 8288 allows them', () => {
  assert.deepEqual(linksOf('</a> ; rel="next",  </b>   ;rel=prev'), new Map([['next', '/a'], ['prev', '/b']]))
})

test('deprecationDate: @ must start the value (after spaces): text before it is not an epoch', () => {
  assert.equal(deprecationDate('x@1767225600'), null)
  assert.equal(deprecationDate('1767225600'), null, 'digits without @ are not an HTTP-date either')
})
