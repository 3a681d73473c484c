// The access hook's readings of a request (src/http/access.ts, src/access/targets.ts,
// src/shared/api-path.ts), each on its own: whether a target lies under /v1 (read the way the
// router reads it), whether its path has an empty segment, and which key a request presents.
// The whole route table over a socket is access-routes.test.ts; these pin the edges one by one.
// Written against the survivors of `npm run mutate -- access` (docs/testing.md).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { FastifyRequest } from 'fastify'
import { hasEmptySegment } from '../../src/access/targets.ts'
import { isApiPath } from '../../src/shared/api-path.ts'
import { presentedKey } from '../../src/http/access.ts'

test('isApiPath: /v1 and what lies under it, however spelled, and nothing else', () => {
  const api = [
    '/v1', '/v1/', '/v1/pets', '/V1/Pets', '/v1?limit=1', '/v1#top', '/v1/pets?x=/v2',
    '/v%31/pets', '/%76%31', '/%761/pets', '/v%31', '//v1/pets', '///v1/pets', '/v1//pets',
    'http://host/v1/pets', 'HTTP://host:8080/v1', 'a+b.c-d://host/v1/x', '/v1/http://host',
    '/v1/%zz', '/v1/pets%'
  ]
  const other = [
    '/', '', '/v2/pets', '/v12', '/v1x', '/x/v1', '/openapi.json', '/docs?u=/v1/', '/x#/v1/', '/%7631', '/v%3', '/v%zz1',
    'http://host/v2', 'http://host', 'http://host?/v1/pets', 'http://host#/v1/pets', '1http://host/v1', '*'
  ]
  for (const url of api) assert.equal(isApiPath(url), true, url)
  for (const url of other) assert.equal(isApiPath(url), false, url)
})

test('hasEmptySegment: a trailing or doubled slash in the path, never in the query or fragment', () => {
  const empty = ['/v1/pets/', '/v1//pets', '//v1', '/v1/pets/?x=1', '/v1/pets/#a', '/v1/pets/?x#y', 'http://host/v1/pets/', 'http://host//v1', 'HTTP://h:1/v1/']
  const none = ['/', '/v1', '/v1/pets', '/v1/pets?x=//', '/v1/pets?x=/', '/v1/pets#a/', '/v1/pets#//', '/v1?a/#b/', 'http://host/v1/pets', 'http://host', 'http://host/', 'http://host?x=//', '*', '']
  for (const url of empty) assert.equal(hasEmptySegment(url), true, url)
  for (const url of none) assert.equal(hasEmptySegment(url), false, url)
})

test('presentedKey: X-API-Key first, else a non-empty Bearer token (any case, trimmed); anything else is no key', () => {
  const key = (headers: Record<string, string | string[]>) => presentedKey({ headers } as unknown as FastifyRequest)
  assert.equal(key({ 'x-api-key': 'psk_a' }), 'psk_a')
  assert.equal(key({ 'x-api-key': 'psk_a', authorization: 'Bearer psk_b' }), 'psk_a')
  assert.equal(key({ 'x-api-key': '', authorization: 'Bearer psk_b' }), 'psk_b', 'an empty X-API-Key is none')
  assert.equal(key({ 'x-api-key': ['psk_a', 'psk_c'] }), null, 'not one header value')
  assert.equal(key({ 'x-api-key': ['psk_a'], authorization: 'Bearer psk_b' }), 'psk_b')
  assert.equal(key({ authorization: 'Bearer psk_b' }), 'psk_b')
  assert.equal(key({ authorization: 'bearer psk_b' }), 'psk_b')
  assert.equal(key({ authorization: 'BEARER   psk_b  ' }), 'psk_b')
  assert.equal(key({ authorization: 'Bearer x' }), 'x')
  for (const authorization of ['Bearer ', 'Bearer', 'Bearer    ', 'Basic cHNrX2I6', 'Bearerpsk_b', 'Token Bearer psk_b', 'xBearer psk_b', 'Bearer\tpsk_b']) {
    assert.equal(key({ authorization }), null, JSON.stringify(authorization))
  }
  assert.equal(key({}), null)
  assert.equal(key({ 'x-api-key': '' }), null)
})
