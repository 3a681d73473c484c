// Telling the instances that a key changed (src/access/key-events.ts): what a message body may
// be, and the one-process channel used without Redis. Written against the survivors of
// `npm run mutate -- access` (docs/testing.md).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { localKeyEvents, parseKeyEvent } from '../../src/access/key-events.ts'

test('parseKeyEvent takes a message of 1 to 16 digits that is a safe integer, and nothing else', () => {
  assert.equal(parseKeyEvent('7'), 7)
  assert.equal(parseKeyEvent('0'), 0)
  assert.equal(parseKeyEvent('0042'), 42)
  assert.equal(parseKeyEvent('9007199254740991'), Number.MAX_SAFE_INTEGER, '16 digits, the largest safe integer')
  assert.equal(parseKeyEvent('9007199254740993'), null, '16 digits, not a safe integer')
  assert.equal(parseKeyEvent('12345678901234567'), null, '17 digits')
  for (const message of ['', ' 7', '7 ', '-7', '+7', '7.0', '1e3', '0x10', 'a7', '7a', 'key 7', '7\n8']) {
    assert.equal(parseKeyEvent(message), null, JSON.stringify(message))
  }
})

test('the local channel calls every listener with each published id, in order, until closed', async () => {
  const events = localKeyEvents()
  await events.ready
  const seen: string[] = []
  events.subscribe((id) => seen.push(`a${id}`))
  events.subscribe((id) => seen.push(`b${id}`))
  events.publish(3)
  events.publish(5)
  assert.deepEqual(seen, ['a3', 'b3', 'a5', 'b5'])
  await events.close()
  events.publish(8)
  assert.deepEqual(seen, ['a3', 'b3', 'a5', 'b5'], 'a closed channel calls no one')
})
