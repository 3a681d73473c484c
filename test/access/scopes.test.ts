// The scope rules of src/accounts/scopes.ts, alone (the HTTP behaviour is in
// scopes.http.test.ts beside it). Faults caught (mutation testing found them unasserted): an
// operation that needs no scope (null, or none declared) refused to a restricted key; a stored
// scope list read back with a word this program does not know, which would widen nothing today
// but would be shown and compared as if it were a scope.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { missingScope, scopesFromText, scopesOfNeed, scopesToText, type Scope } from '../../src/accounts/scopes.ts'

const restricted = new Set<Scope>(['catalog:read'])

test('an operation that needs no scope is open to a restricted key; one that does names the first scope it lacks', () => {
  assert.equal(missingScope('customer', restricted, null), null)
  assert.equal(missingScope('customer', restricted, undefined), null)
  assert.deepEqual([scopesOfNeed(null), scopesOfNeed(undefined), scopesOfNeed('orders:read')], [[], [], ['orders:read']])
  assert.equal(missingScope('customer', restricted, 'catalog:read'), null)
  assert.equal(missingScope('customer', restricted, ['catalog:read', 'orders:read']), 'orders:read')
  // An unrestricted key lacks nothing; a scope the role cannot hold is not asked of it.
  assert.equal(missingScope('customer', null, 'orders:read'), null)
  assert.equal(missingScope('staff', new Set<Scope>(['orders:read']), ['orders:read', 'keys:admin']), null)
})

test('the stored list reads back in canonical order, and a word this program does not know is dropped', () => {
  assert.equal(scopesToText(['orders:read', 'catalog:read', 'orders:read']), 'catalog:read,orders:read')
  assert.deepEqual(scopesFromText('catalog:read,reports:export,orders:read'), ['catalog:read', 'orders:read'])
  assert.equal(scopesFromText(null), null)
})
