// Reading GET /v1/events in the event tests of issue 31 (key bans, quota, deprecation): every
// event a reader sees from the start, following the Link of each page.
import assert from 'node:assert/strict'
import type { TestApp } from '../helpers/app.ts'

export interface FeedEvent { id: string; type: string; createdAt: string; data: Record<string, unknown> }

export interface Reader { key?: string; role?: 'customer' | 'staff' | 'admin' }

async function walk (h: TestApp, reader: Reader, type: string): Promise<FeedEvent[]> {
  const seen: FeedEvent[] = []
  let url = `/v1/events?limit=100&type=${encodeURIComponent(type)}`
  for (;;) {
    const res = await h.call({
      method: 'GET',
      url,
      ...(reader.key !== undefined ? { key: reader.key } : { role: reader.role ?? 'admin' })
    })
    assert.equal(res.statusCode, 200, res.body)
    const page = res.json() as FeedEvent[]
    seen.push(...page)
    if (page.length === 0) return seen
    const match = /^<(\/v1\/events\?[^>]*)>; rel="next"$/.exec(String(res.headers.link))
    assert.ok(match, 'every page links to the next')
    url = match[1]!
  }
}

/**
 * The events of `type` (a name or a family) the reader sees, once there are at least `atLeast`.
 * On PostgreSQL the feed shows an event once every older transaction of the cluster has ended,
 * so it may lag a moment behind the commit: it never skips, it waits.
 */
export async function eventsOf (h: TestApp, type: string, atLeast: number, reader: Reader = {}): Promise<FeedEvent[]> {
  const deadline = Date.now() + 20_000
  for (;;) {
    const events = await walk(h, reader, type)
    if (events.length >= atLeast || Date.now() > deadline) return events
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/**
 * Writes a marker event (a category made by admin) and waits until the feed shows it: every
 * event committed before it is then visible too, on either engine, so a test can count events
 * that must not be there without sleeping.
 */
export async function barrier (h: TestApp): Promise<void> {
  const before = (await eventsOf(h, 'category.created', 0)).length
  const res = await h.call({ method: 'POST', url: '/v1/categories', payload: { name: 'marker' } })
  assert.equal(res.statusCode, 201, res.body)
  assert.equal((await eventsOf(h, 'category.created', before + 1)).length, before + 1)
}
