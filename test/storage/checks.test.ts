// The engine-neutral rules of src/storage/checks.ts, on their own: each engine's SQL hands them
// rows in its own shape (SQLite's 0/1, PostgreSQL's booleans), so both shapes are pinned here.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { openOrder, stockAsksOpenOrders } from '../../src/storage/checks.ts'
import type { OrderRow } from '../../src/storage/rows.ts'

function order (complete: boolean | number): OrderRow {
  return {
    id: 7, pet_id: 1, quantity: 1, ship_date: null, complete, owner_key_id: 3, version: 1
  } as unknown as OrderRow
}

test('openOrder refuses a complete order with 409 order_already_complete, whether the engine says true (PostgreSQL) or 1 (SQLite)', () => {
  for (const complete of [true, 1]) {
    assert.throws(
      () => openOrder(order(complete), 7, null, null),
      (e: { code?: string }) => e.code === 'order_already_complete',
      `complete = ${String(complete)}`
    )
  }
  for (const complete of [false, 0]) assert.equal(openOrder(order(complete), 7, null, null).id, 7)
})

test('setting stock asks about open orders only when an available pet goes to 0 (rule 6): no query otherwise', () => {
  assert.equal(stockAsksOpenOrders('available', 0), true)
  assert.equal(stockAsksOpenOrders('available', 1), false)
  assert.equal(stockAsksOpenOrders('pending', 0), false)
  assert.equal(stockAsksOpenOrders('sold', 0), false)
  assert.equal(stockAsksOpenOrders('pending', 3), false)
})
