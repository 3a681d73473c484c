// The client's events: the feed followed through its cursor, one event by id, against the real
// server (SQLite; the server's own suites run the feed on PostgreSQL too).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { Event } from '../src/index.ts'
import { serveForClient } from './helpers.ts'

const names = (events: Event[]) => events.map((e) => `${e.type}:${String((e.data as { name?: string }).name)}`)

test('events.list() follows the cursor page after page to the end; events.page() gives the cursor to read on from later', async (t) => {
  const server = await serveForClient(t)
  const staff = server.client()
  for (let i = 1; i <= 5; i++) await staff.categories.create({ name: `C${i}` })

  const seen: Event[] = []
  for await (const event of staff.events.list({ type: 'category.*', limit: 2 })) seen.push(event)
  assert.deepEqual(names(seen), ['category.created:C1', 'category.created:C2', 'category.created:C3', 'category.created:C4', 'category.created:C5'])
  assert.deepEqual(await staff.events.get(seen[2]!.id), seen[2])

  const { events: upToNow, cursor } = await staff.events.page({ type: 'category.*', limit: 100 })
  assert.equal(upToNow.length, 5)
  const { events: none, cursor: same } = await staff.events.page({ type: 'category.*', cursor })
  assert.deepEqual(none, [])
  assert.equal(same, cursor, 'an empty page gives back the position it stands at')
  await staff.categories.create({ name: 'C6' })
  const later: Event[] = []
  for await (const event of staff.events.list({ type: 'category.*', cursor })) later.push(event)
  assert.deepEqual(names(later), ['category.created:C6'], 'from the kept cursor: only what came later')
  await assert.rejects(staff.events.get(`evt_${'0'.repeat(32)}`), { name: 'PetstoreError', status: 404, code: 'not_found' })
})

test('events.list({ follow: true }) polls the feed after its last page and yields what comes later, until aborted', async (t) => {
  const server = await serveForClient(t)
  const admin = server.client({ apiKey: server.keys.admin })
  const abort = new AbortController()
  let polls = 0
  const follower = server.client({
    apiKey: server.keys.admin,
    // Each wait of the follower: a change is made meanwhile (twice), then the reader stops.
    sleep: async () => {
      polls++
      if (polls <= 2) await admin.categories.create({ name: `Later ${polls}` })
      else abort.abort()
    }
  })
  const seen: Event[] = []
  for await (const event of follower.events.list({ type: 'category.*', follow: true, pollMs: 5, signal: abort.signal })) {
    seen.push(event)
  }
  assert.deepEqual(names(seen), ['category.created:Later 1', 'category.created:Later 2'])
  assert.equal(polls, 3)
})
