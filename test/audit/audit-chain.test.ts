// The audit log's chain, output for input (src/audit/audit.rules.ts, audit.service.ts): the
// canonical JSON and hash an outside verifier must be able to recompute, the verdict of the walk
// for each way a log can be tampered with, a head kept elsewhere (--known), and the list's filter
// and pages. No database: the store is a stand-in array. The same over SQL on both engines:
// audit-verify.http.test.ts.
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { test } from 'node:test'
import { canonicalJson, chainHash, createChainCheck, nextEntry, type AuditDraft } from '../../src/audit/audit.rules.ts'
import { auditFilterOf, createAuditService } from '../../src/audit/audit.service.ts'
import type { AuditEntry, AuditHead, AuditStore } from '../../src/audit/audit.store.ts'
import { AppError } from '../../src/errors.ts'
import { encodeCursor } from '../../src/shared/pagination.ts'

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex')

function draft (n: number): AuditDraft {
  return {
    at: 1_764_000_000_000 + n,
    actor: { type: 'key', keyId: 2, role: 'staff' },
    action: 'pet.update',
    target: { type: 'pet', id: String(n) },
    requestId: `req-${n}`,
    address: '192.0.2.1',
    changes: { name: { before: 'Max', after: `Rex ${n}` } }
  }
}

/** A chain of `count` entries as the engines append them, and its head. */
function chain (count: number): { entries: AuditEntry[]; head: AuditHead } {
  const entries: AuditEntry[] = []
  let head: AuditHead = { count: 0, hash: '' }
  for (let n = 1; n <= count; n++) {
    const entry = nextEntry(head, draft(n))
    entries.push(entry)
    head = { count: entry.id, hash: entry.hash }
  }
  return { entries, head }
}

/** The walk of `petstore audit verify` over these entries and head. */
function walk (entries: readonly AuditEntry[], head: AuditHead) {
  const check = createChainCheck()
  const visited: number[] = []
  for (const entry of entries) {
    visited.push(entry.id)
    if (!check.visit(entry)) break
  }
  return { fault: check.finish(head), checked: check.checked, visited }
}

test('canonicalJson sorts every object\'s keys by code unit, drops undefined fields, writes null for an undefined item, and no white space', () => {
  const value = { b: 1, a: [3, undefined, { d: null, c: 'x "y"' }], e: undefined, B: true, ab: { z: [], y: {} } }
  assert.equal(canonicalJson(value), '{"B":true,"a":[3,null,{"c":"x \\"y\\"","d":null}],"ab":{"y":{},"z":[]},"b":1}')
  assert.equal(canonicalJson('text'), '"text"')
  assert.equal(canonicalJson(null), 'null')
  assert.equal(canonicalJson(12.5), '12.5')
})

test('an entry\'s hash is the SHA-256 of the previous hash and its canonical JSON: what an outside verifier recomputes', () => {
  // Fault caught: a field left out of the hash (it could then be changed unseen), or a format an
  // operator's own script cannot reproduce from the documented rule.
  const first = draft(1)
  const json = '{"action":"pet.update","actor":{"keyId":2,"role":"staff","type":"key"},"address":"192.0.2.1",'
    + '"at":1764000000001,"changes":{"name":{"after":"Rex 1","before":"Max"}},"id":1,"requestId":"req-1",'
    + '"target":{"id":"1","type":"pet"}}'
  assert.equal(chainHash('', 1, first), sha256(json))
  const previous = 'ab'.repeat(32)
  assert.equal(chainHash(previous, 1, first), sha256(previous + json))
  // Every field counts: a change to any one changes the hash.
  const changed: AuditDraft[] = [
    { ...first, at: first.at + 1 },
    { ...first, actor: { type: 'cli', user: 'root' } },
    { ...first, action: 'pet.delete' },
    { ...first, target: { type: 'pet', id: '2' } },
    { ...first, requestId: null },
    { ...first, address: null },
    { ...first, changes: {} }
  ]
  const hashes = new Set([chainHash('', 1, first), chainHash('', 2, first), ...changed.map((d) => chainHash('', 1, d))])
  assert.equal(hashes.size, 9)
})

test('nextEntry numbers the entry after the head and chains it to the head\'s hash', () => {
  const head = { count: 41, hash: 'cd'.repeat(32) }
  const entry = nextEntry(head, draft(42))
  assert.deepEqual(entry, { id: 42, ...draft(42), hash: chainHash(head.hash, 42, draft(42)) })
})

test('an intact chain, an empty one included, has no fault and counts every entry checked', () => {
  const { entries, head } = chain(5)
  assert.deepEqual(walk(entries, head), { fault: null, checked: 5, visited: [1, 2, 3, 4, 5] })
  assert.deepEqual(walk([], { count: 0, hash: '' }), { fault: null, checked: 0, visited: [] })
})

test('an entry changed in the middle is named, and the walk stops there', () => {
  const { entries, head } = chain(5)
  const tampered = entries.map((entry) => entry.id === 3 ? { ...entry, target: { type: 'pet', id: '999' } } : entry)
  assert.deepEqual(walk(tampered, head), {
    fault: { entry: 3, problem: 'changed', message: 'entry 3 was changed (or inserted in its place): its hash does not follow from entry 2 and its content' },
    checked: 2,
    visited: [1, 2, 3]
  })
  // Its hash recomputed to match its new content: the next entry no longer follows from it.
  const rehashed = tampered.map((entry) => {
    return entry.id === 3 ? { ...entry, hash: chainHash(entries[1]!.hash, 3, entry) } : entry
  })
  assert.deepEqual(walk(rehashed, head).fault?.entry, 4)
})

test('an entry removed in the middle is named with its neighbours', () => {
  const { entries, head } = chain(5)
  assert.deepEqual(walk(entries.filter((entry) => entry.id !== 3), head), {
    fault: { entry: 3, problem: 'removed', message: 'entry 3 was removed: the log goes from entry 2 to entry 4' },
    checked: 2,
    visited: [1, 2, 4]
  })
})

test('a log cut at its end is removed entries against the head; a head that is not the last entry\'s hash is a change', () => {
  const { entries, head } = chain(5)
  assert.deepEqual(walk(entries.slice(0, 3), head).fault, {
    entry: 4, problem: 'removed', message: 'entry 4 was removed: the log ends at entry 3, the head counts 5'
  })
  assert.deepEqual(walk(entries, { count: 5, hash: 'f'.repeat(64) }).fault, {
    entry: 5, problem: 'changed', message: 'entry 5 was changed: its hash is not the head\'s'
  })
})

test('an entry past the head\'s count is inserted, well formed or not', () => {
  const { entries, head } = chain(5)
  const wellFormed = nextEntry(head, draft(6))
  assert.deepEqual(walk([...entries, wellFormed], head), {
    fault: { entry: 6, problem: 'inserted', message: 'entry 6 was inserted: the head counts 5 entries' },
    checked: 6,
    visited: [1, 2, 3, 4, 5, 6]
  })
  const badHash = { ...wellFormed, hash: '0'.repeat(64) }
  assert.deepEqual(walk([...entries, badHash], head).fault, {
    entry: 6, problem: 'inserted', message: 'entry 6 was inserted: the head counts 5 entries'
  })
  // A gap past the head's count is a removal still: the entry missing is named.
  assert.deepEqual(walk([...entries, { ...wellFormed, id: 7 }], head).fault, {
    entry: 6, problem: 'removed', message: 'entry 6 was removed: the log goes from entry 5 to entry 7'
  })
  // Within the head's count, a bad entry is a change, not an insertion.
  assert.equal(walk([...entries.slice(0, 4), { ...entries[4]!, hash: '0'.repeat(64) }], head).fault?.problem, 'changed')
})

/** A store holding these entries and head, recording how far each walk went. */
type StandInStore = AuditStore & { walked: number[][]; listed: unknown[][] }

function storeOf (entries: readonly AuditEntry[], head: AuditHead): StandInStore {
  const walked: number[][] = []
  const listed: unknown[][] = []
  return {
    walked,
    listed,
    async listAudit (filter, beforeId, limit) {
      listed.push([filter, beforeId, limit])
      return entries.filter((entry) => beforeId === null || entry.id < beforeId).reverse().slice(0, limit)
    },
    async auditHead () { return head },
    async walkAudit (visit) {
      const seen: number[] = []
      walked.push(seen)
      for (const entry of entries) {
        seen.push(entry.id)
        if (!visit(entry)) break
      }
      return head
    }
  }
}

test('verify with a head kept earlier: intact when the log still holds it, changed when that entry differs, removed when the log is shorter', async () => {
  const { entries, head } = chain(5)
  const kept = { count: 3, hash: entries[2]!.hash }
  const store = storeOf(entries, head)
  assert.deepEqual(await createAuditService(store).verify(kept), { head, checked: 5, fault: null })
  assert.deepEqual(await createAuditService(store).verify(), { head, checked: 5, fault: null })

  const other = storeOf(entries, head)
  assert.deepEqual(await createAuditService(other).verify({ count: 3, hash: 'e'.repeat(64) }), {
    head,
    checked: 3,
    fault: { entry: 3, problem: 'changed', message: 'entry 3 is not the one recorded: its hash differs from the head kept' }
  })
  assert.deepEqual(other.walked, [[1, 2, 3]], 'the walk stops at the entry kept')

  // Wiped, its head reset: the chain alone is intact; the head kept is not in it.
  const wiped = storeOf([], { count: 0, hash: '' })
  assert.deepEqual(await createAuditService(wiped).verify({ count: 5, hash: head.hash }), {
    head: { count: 0, hash: '' },
    checked: 0,
    fault: { entry: 1, problem: 'removed', message: 'entry 1 was removed: the head kept counts 5, the log 0' }
  })
  // A chain fault is told before the head kept: the first fault in the log.
  const broken = storeOf(entries.filter((entry) => entry.id !== 2), head)
  assert.equal((await createAuditService(broken).verify({ count: 9, hash: head.hash })).fault?.entry, 2)
})

test('the list\'s filter: a key id or an actor type, an exact action or a family, a target, and a time range', () => {
  assert.deepEqual(auditFilterOf({ actor: '42', action: 'key.*', targetType: 'key', targetId: '7', since: '2026-11-20T10:00:00Z', until: '2026-11-21T10:00:00.500Z' }), {
    actor: { keyId: 42 },
    action: { prefix: 'key.' },
    targetType: 'key',
    targetId: '7',
    since: Date.UTC(2026, 10, 20, 10),
    until: Date.UTC(2026, 10, 21, 10, 0, 0, 500)
  })
  assert.deepEqual(auditFilterOf({ actor: 'cli', action: 'key.revoke' }), { actor: { type: 'cli' }, action: { exact: 'key.revoke' } })
  assert.deepEqual(auditFilterOf({ actor: '4x' }), { actor: { type: '4x' } })
  assert.deepEqual(auditFilterOf({ actor: 'x4' }), { actor: { type: 'x4' } })
  assert.deepEqual(auditFilterOf({}), {})
  for (const name of ['since', 'until'] as const) {
    assert.throws(() => auditFilterOf({ [name]: 'yesterday' }), (error: unknown) => {
      assert.ok(error instanceof AppError)
      assert.equal(error.code, 'validation_failed')
      assert.equal(error.message, `${name} is not a date-time`)
      assert.deepEqual(error.details, [{ path: name, message: 'is not an RFC 3339 date-time' }])
      return true
    })
  }
})

test('the list pages newest first: a cursor after a full page, none after the last', async () => {
  const { entries, head } = chain(5)
  const store = storeOf(entries, head)
  const service = createAuditService(store)
  const first = await service.list({ limit: 2 })
  assert.deepEqual(first.items.map((entry) => entry.id), [5, 4])
  assert.equal(first.nextCursor, encodeCursor(4))
  const second = await service.list({ limit: 2, cursor: first.nextCursor! })
  assert.deepEqual(second.items.map((entry) => entry.id), [3, 2])
  assert.equal((await service.list({ limit: 3 })).nextCursor, encodeCursor(3), 'the cursor is the page\'s last entry')
  const last = await service.list({ limit: 2, cursor: second.nextCursor! })
  assert.deepEqual([last.items.map((entry) => entry.id), last.nextCursor], [[1], null])
  // A page exactly as long as what is left has no cursor either; the store is asked one more.
  assert.deepEqual(await service.list({ limit: 5 }), { items: [...entries].reverse(), nextCursor: null })
  assert.deepEqual(store.listed.at(-1), [{}, null, 6])
  assert.deepEqual(await service.head(), head)
})
