// A ban lifted in the database (by `petstore keys unban` or another instance's admin API) reaches
// a running instance at its next poll, without Redis: the in-process limiter drops it.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createBanSync } from '../../src/keys/ban-sync.ts'
import { subjectOfKey } from '../../src/keys/keys.service.ts'
import { buildTestApp } from '../helpers/app.ts'

test('a lift recorded in the database is applied by the next poll; a newer ban of the same key stays', async (t) => {
  const { call, makeKey, stores, limiter, clock } = await buildTestApp(t)
  const { id, key } = await makeKey('customer', 'enterprise', { perMinute: 1, perDay: 1000 })
  const banSync = createBanSync(stores.keys, limiter, { startAt: clock.now() })
  const banNow = async () => {
    await call({ method: 'GET', url: '/v1/pets', key })
    const codes = []
    for (let i = 0; i < 21; i++) codes.push((await call({ method: 'GET', url: '/v1/pets', key })).json().code)
    assert.equal(codes.at(-1), 'api_key_banned')
  }
  await banNow()
  assert.equal(await banSync.tick(), 0, 'nothing lifted yet')

  // What `petstore keys unban ID` does: it only writes the database.
  clock.advance(1000)
  assert.equal(await stores.keys.liftBans(id, clock.now()), 1)
  assert.notEqual((await limiter.peek(subjectOfKey(id), { perMinute: 1, perDay: 1000 })).ban, null, 'the instance still holds the ban')
  assert.equal(await banSync.tick(), 1)
  assert.equal((await limiter.peek(subjectOfKey(id), { perMinute: 1, perDay: 1000 })).ban, null)
  assert.equal(await banSync.tick(), 0, 'a lift is applied once')

  // A later ban is not undone by the earlier lift.
  clock.advance(60_000)
  await banNow()
  assert.equal(await banSync.tick(), 0)
  assert.notEqual((await limiter.peek(subjectOfKey(id), { perMinute: 1, perDay: 1000 })).ban, null)
})
