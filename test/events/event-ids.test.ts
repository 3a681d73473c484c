// Event ids (events/events.store.ts, newEventId): the documented form, unique, and in time order
// across milliseconds, so that the events' unique index grows at its end (docs/performance.md).
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import { test } from 'node:test'
import { newEventId } from '../../src/events/events.store.ts'

test('event ids: evt_ and 32 lowercase hex digits, 10,000 made at once all different', () => {
  const ids = Array.from({ length: 10_000 }, () => newEventId())
  for (const id of ids) assert.match(id, /^evt_[0-9a-f]{32}$/)
  // Fault caught: an id of the millisecond alone (or too few random bits): ids of one ms collide.
  assert.equal(new Set(ids).size, ids.length)
})

test('event ids: one made in a later millisecond sorts after (a random id would not, one time in two)', async () => {
  for (let i = 0; i < 20; i++) {
    const earlier = newEventId()
    await sleep(2)
    const later = newEventId()
    assert.ok(earlier < later, `${earlier} < ${later}`)
  }
})
