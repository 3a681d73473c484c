// A key holder's own rotation is in the audit log like an admin's (docs/product.md 14.2; issue 48
// finding 10: the page said it was not, while the log had it). Faults caught: a self-rotation
// left out of the log, recorded as another actor (an admin, the system) or without its request.
// Runs on SQLite and, with PETSTORE_TEST_ENGINE=postgres, on PostgreSQL.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp } from '../helpers/app.ts'

test('POST /v1/keys/me/rotate is audited as key.rotate, its actor the key that asked, with its request and address', async (t) => {
  const h = await buildTestApp(t)
  const holder = await h.makeKey('customer', 'pro')
  const rotated = await h.call({
    method: 'POST', url: '/v1/keys/me/rotate', key: holder.key, remoteAddress: '198.51.100.77',
    payload: { gracePeriodSeconds: 0 }
  })
  assert.equal(rotated.statusCode, 201, rotated.body)
  const successor = rotated.json().id as number

  const entries = (await h.call({ method: 'GET', url: `/v1/admin/audit?action=key.rotate&targetId=${holder.id}` })).json()
  assert.equal(entries.length, 1)
  const [entry] = entries
  assert.deepEqual(entry.actor, { type: 'key', keyId: holder.id, role: 'customer' })
  assert.deepEqual(entry.target, { type: 'key', id: String(holder.id) })
  assert.deepEqual(entry.changes, { replacedBy: { before: null, after: successor } })
  assert.equal(entry.requestId, rotated.headers['request-id'])
  assert.equal(entry.address, '198.51.100.77')
})
