// The request log's recorder on its own (key-requests/key-requests.recorder.ts): the buffer is
// bounded (the oldest ordinary request goes first, counted; refusals are kept apart), a flush is
// one store call oldest first, and a failed flush keeps its batch. Faults caught: an unbounded
// buffer under a flood; refusals pushed out by ordinary traffic; a batch lost to one failure.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { newRequestId } from '../../src/http/request-log.ts'
import { APPEND_ROWS, createRequestRecorder, refusalOf, type RequestFacts } from '../../src/key-requests/key-requests.recorder.ts'
import { uuidBytes, uuidText } from '../../src/shared/uuid.ts'
import type { KeyRequestRecord, KeyRequestStore } from '../../src/key-requests/key-requests.store.ts'

function facts (keyId: number, at: number, status = 200): RequestFacts {
  return {
    keyId, at, method: 'GET', route: '/v1/pets', operationId: 'listPets', query: null, status,
    code: status === 403 ? 'forbidden' : null, message: status === 403 ? 'needs admin' : null,
    requestId: `r${at}`, latencyMs: 1, via: null, decision: null, role: 'admin', scope: null,
    keyRole: 'customer', keyScopes: null
  }
}

function fakeStore (): KeyRequestStore & { batches: KeyRequestRecord[][]; fail: boolean } {
  const store = {
    batches: [] as KeyRequestRecord[][],
    fail: false,
    async append (records: readonly KeyRequestRecord[]) {
      if (store.fail) throw new Error('database down')
      store.batches.push([...records])
    },
    async list () { return [] },
    async prune () { return 0 },
    async keysWithRefusalsBefore () { return [] }
  }
  return store
}

test('a full buffer drops its oldest ordinary requests, counted, and keeps every refusal; a flush is one call, oldest first', async () => {
  const store = fakeStore()
  const recorder = createRequestRecorder(store, { pendingMax: 4 })
  recorder.record(facts(1, 1, 403))
  for (let at = 2; at <= 7; at++) recorder.record(facts(at, at))
  assert.equal(recorder.dropped(), 2, 'two ordinary requests of keys with nothing newer were lost')
  await recorder.flush()
  assert.equal(store.batches.length, 1)
  assert.deepEqual(store.batches[0]!.map((r) => [r.at, r.refusal?.rule ?? null]), [
    [1, 'role'], [4, null], [5, null], [6, null], [7, null]
  ])
  assert.deepEqual(recorder.takeWritten().sort(), [1, 4, 5, 6, 7])
  assert.deepEqual(recorder.takeWritten(), [])
  await recorder.flush()
  assert.equal(store.batches.length, 1, 'nothing pending: no call')
})

test('a failed flush keeps its batch for the next one', async () => {
  const store = fakeStore()
  const recorder = createRequestRecorder(store)
  recorder.record(facts(1, 1))
  store.fail = true
  await assert.rejects(recorder.flush(), /database down/)
  store.fail = false
  recorder.record(facts(1, 2))
  await recorder.flush()
  assert.deepEqual(store.batches.map((b) => b.map((r) => r.at)), [[1, 2]])
})

test('the rule of a refusal: the window used up (the day when both are), the ban, the role, the scope lacked', () => {
  const window = (remaining: number, resetAt: number) => ({ limit: 60, remaining, resetAt })
  const decision = (minute: number, day: number) => ({
    allowed: false, code: 'rate_limited' as const, minute: window(minute, 60_000), day: window(day, 86_400_000),
    retryAfterSeconds: 1, ban: null, banStarted: false
  })
  const limited = (d: ReturnType<typeof decision>) => refusalOf({ ...facts(1, 0, 429), code: 'rate_limited', message: 'm', decision: d })
  assert.deepEqual(limited(decision(0, 5)), { rule: 'minute_window', message: 'm', limit: 60, resetAt: '1970-01-01T00:01:00.000Z' })
  assert.deepEqual(limited(decision(0, 0)), { rule: 'day_window', message: 'm', limit: 60, resetAt: '1970-01-02T00:00:00.000Z' })
  assert.deepEqual(refusalOf({
    ...facts(1, 0, 429), code: 'api_key_banned', message: 'b',
    decision: { ...decision(0, 5), code: 'api_key_banned', ban: { until: 900_000, reason: 'r', startedAt: 0, level: 1 } }
  }), { rule: 'ban', message: 'b', until: '1970-01-01T00:15:00.000Z', reason: 'r' })
  assert.deepEqual(refusalOf(facts(1, 0, 403)), { rule: 'role', message: 'needs admin', needed: 'admin' })
  assert.deepEqual(refusalOf({
    ...facts(1, 0, 403), code: 'insufficient_scope', message: 's', role: 'customer',
    scope: ['catalog:read', 'orders:write'], keyScopes: new Set(['catalog:read'])
  }), { rule: 'scope', message: 's', needed: 'orders:write' })
  assert.equal(refusalOf({ ...facts(1, 0, 404), code: 'not_found' }), null)
})

// The pipeline's common case passes values (no object per request): what it writes must be what
// record() writes of the same request, and a flood of one key writes only its newest KEEP_LAST.
test('add() writes what record() writes; a key flooding past KEEP_LAST writes its newest, oldest first', async () => {
  const store = fakeStore()
  const recorder = createRequestRecorder(store, { pendingMax: 5000 })
  recorder.record({ ...facts(9, 1), query: 'limit=2', via: 'mcp', status: 404, code: 'not_found' })
  recorder.add(9, 2, 'GET', '/v1/pets', 'listPets', 'limit=2', 404, 'not_found', 'r2', 1, 'mcp')
  await recorder.flush()
  const [first, second] = store.batches[0]!
  assert.deepEqual({ ...second, at: 1, requestId: 'r1' }, first)
  for (let at = 1; at <= 1500; at++) recorder.add(3, at, 'GET', '/v1/pets/{petId}', 'getPetById', null, 200, null, `r${at}`, 0.5, null)
  await recorder.flush()
  assert.deepEqual(store.batches.slice(1).map((b) => b.length), [200, 200, 200, 200, 200], 'in parts of APPEND_ROWS')
  const flood = store.batches.slice(1).flat()
  assert.equal(flood.length, 1000)
  assert.deepEqual([flood[0]!.at, flood.at(-1)!.at, flood[0]!.requestId], [501, 1500, 'r501'])
  assert.deepEqual(flood.map((r) => r.at), Array.from({ length: 1000 }, (_, i) => 501 + i), 'oldest first, across the parts')
  assert.equal(recorder.dropped(), 0, 'the 500 older ones: the store would not keep them; nothing lost')
})

test('a part the store refuses is kept with every part after it, and written by the next flush; none of the parts before it twice', async () => {
  const store = fakeStore()
  let appends = 0
  const append = store.append.bind(store)
  store.append = async (records) => {
    if (++appends === 2) throw new Error('database busy')
    await append(records)
  }
  const recorder = createRequestRecorder(store)
  for (let at = 1; at <= APPEND_ROWS * 2 + 10; at++) recorder.record(facts(1, at))
  await assert.rejects(recorder.flush(), /database busy/)
  assert.deepEqual(store.batches.map((b) => b.length), [APPEND_ROWS])
  await recorder.flush()
  const written = store.batches.flat().map((r) => r.at)
  assert.deepEqual(written, Array.from({ length: APPEND_ROWS * 2 + 10 }, (_, i) => i + 1), 'each once, in order')
})

test('every request id comes back exactly as the request had it: ours (kept as 16 bytes) and a caller\'s own', async () => {
  const store = fakeStore()
  const recorder = createRequestRecorder(store, { pendingMax: 3 })
  const ours = [newRequestId(), '00000000-0000-4000-8000-000000000000', 'ffffffff-ffff-4fff-bfff-ffffffffffff']
  // A caller's own: upper case, a UUID's length with a stray character, a dash misplaced, a short token.
  const theirs = ['0E3F6C4A-1B2C-4D5E-8F90-A1B2C3D4E5F6', '0e3f6c4a-1b2c-4d5e-8f90-a1b2c3d4e5fg', '0e3f6c4a1-b2c-4d5e-8f90-a1b2c3d4e5f6', 'trace:7']
  const all = [...ours, ...theirs]
  // Three slots reused over and over: a caller's id in a slot an id of ours had, and the reverse.
  for (let round = 0; round < 2; round++) {
    for (let i = 0; i < all.length; i += 3) {
      const ids = all.slice(i, i + 3)
      for (const [n, id] of ids.entries()) recorder.record({ ...facts(1, n), requestId: id })
      await recorder.flush()
      assert.deepEqual(store.batches.at(-1)!.map((r) => r.requestId), ids)
    }
    all.reverse()
  }
  for (const id of ours) {
    const bytes = new Uint8Array(20)
    assert.equal(uuidBytes(id, bytes, 4), true, id)
    assert.equal(uuidText(bytes, 4), id)
  }
  for (const id of theirs) assert.equal(uuidBytes(id, new Uint8Array(16), 0), false, id)
})
