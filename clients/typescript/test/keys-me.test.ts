// The client's keys.me: the key it sends, read, counted, banned and rotated, against the real
// server. Faults caught: a method calling the wrong operation or dropping gracePeriodSeconds, and
// a banned key's reads of its own view retried or refused by the client.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { serveForClient } from './helpers.ts'

test('keys.me.get(), usage() and bans() read the key the client sends; rotate() makes a successor whose key a new client uses', async (t) => {
  const server = await serveForClient(t, { deps: { usageFlushMs: 0 } })
  const mine = await server.makeKey('customer', 'pro')
  const client = server.client({ apiKey: mine.key })
  const view = await client.keys.me.get()
  assert.deepEqual(
    { id: view.id, role: view.role, plan: view.plan, replacedBy: view.replacedBy },
    { id: mine.id, role: 'customer', plan: 'pro', replacedBy: null }
  )
  const usage = await client.keys.me.usage(1)
  assert.deepEqual(usage, {
    keyId: mine.id,
    days: [{ date: '2026-11-21', allowed: 1, limited: 0, banned: 0, mcp: 0, other4xx: 0 }],
    deprecated: []
  })
  assert.deepEqual(await client.keys.me.bans(), { keyId: mine.id, bans: [] })

  const successor = await client.keys.me.rotate({ gracePeriodSeconds: 60 })
  assert.equal(successor.replaces, mine.id)
  assert.deepEqual((await client.keys.me.get()).replacedBy, successor.id, 'the old key still works, and names its successor')
  assert.equal((await server.client({ apiKey: successor.key }).keys.me.get()).id, successor.id)
  server.clock.advance(60_000)
  await assert.rejects(client.keys.me.get(), { name: 'PetstoreError', status: 401, code: 'api_key_expired' })
  // Without options, a day's grace (the body is optional).
  const next = await server.client({ apiKey: successor.key }).keys.me.rotate()
  const old = await server.call({ method: 'GET', url: `/v1/admin/keys/${successor.id}` })
  assert.equal(old.json().replacedBy, next.id)
  assert.equal(old.json().expiresAt, new Date(server.clock.now() + 86_400_000).toISOString())
})

test('a banned key\'s client reads keys.me.get() and bans() at once, while its other calls reject with api_key_banned', async (t) => {
  const server = await serveForClient(t)
  const { key } = await server.makeKey('customer', 'free')
  // Into a ban, past the client (which would wait instead): 60 allowed, then 21 sent too early.
  for (let i = 0; i < 81; i++) await fetch(`${server.baseUrl}/pets`, { headers: { 'x-api-key': key } })
  const client = server.client({ apiKey: key })
  const view = await client.keys.me.get()
  assert.ok(view.ban !== null, 'the view shows the ban in force')
  const { bans } = await client.keys.me.bans()
  assert.equal(bans.length, 1)
  assert.equal(bans[0]!.until, view.ban.until)
  await assert.rejects(client.pets.list(), { name: 'PetstoreError', status: 429, code: 'api_key_banned' })
})
