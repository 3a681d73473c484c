// Fair delivery (issue 48 finding 2): the attempt slots of an instance are shared by every key
// holder, so each holder's endpoints together hold at most their share. Twenty endpoints that
// never answer, ten of each of two key holders, once took all 64 slots, and a third holder's
// delivery waited for their attempts' deadline (9.9 s measured); now it goes out at once.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { startReceiver } from './receiver.ts'
import { received, subscribe, webhookApp } from './helpers.ts'

test('20 hanging endpoints of two key holders hold at most 16 slots each; a third holder\'s deliveries arrive within 1 s', async (t) => {
  // A deadline far longer than the bound: before the fix, the third holder waited for it.
  const app = await webhookApp(t, { env: { WEBHOOK_TIMEOUT_MS: '5000', WEBHOOK_RETRY_SCHEDULE: '24h' } })
  const hanging = await startReceiver(t, () => { /* never answers */ })
  const live = await startReceiver(t)
  const holders = [await app.makeKey('customer'), await app.makeKey('customer')]
  const dead: string[][] = [[], []]
  for (const [h, holder] of holders.entries()) {
    for (let i = 0; i < 10; i++) {
      dead[h]!.push((await subscribe(app, `http://127.0.0.1:${hanging.port}/holder${h}/${i}`, ['webhook.test'], holder.key)).id)
    }
  }
  const third = await app.makeKey('customer')
  const mine = await subscribe(app, live, ['webhook.test'], third.key)

  // Five tests per hanging endpoint: 100 deliveries, more than the 64 slots of the instance.
  for (const [h, ids] of dead.entries()) {
    for (const id of ids) {
      for (let n = 0; n < 5; n++) {
        assert.equal((await app.call({ method: 'POST', url: `/v1/webhooks/${id}/test`, key: holders[h]!.key })).statusCode, 202)
      }
    }
  }
  await received(hanging, 32, 3000)
  // Rounds enough for a claim to take more, were there room for it.
  await new Promise((resolve) => setTimeout(resolve, 300))
  const byHolder = [0, 1].map((h) => hanging.received.filter((r) => r.url.startsWith(`/holder${h}/`)).length)
  assert.deepEqual(byHolder, [16, 16], 'each key holder holds its share of 16 attempts, no more')

  for (let n = 0; n < 3; n++) {
    const started = Date.now()
    assert.equal((await app.call({ method: 'POST', url: `/v1/webhooks/${mine.id}/test`, key: third.key })).statusCode, 202)
    await received(live, n + 1, 1000)
    assert.ok(Date.now() - started < 1000, `delivery ${n + 1} within 1 s`)
  }
  assert.equal(hanging.received.length, 32, 'the hanging endpoints got no more attempts meanwhile')
})
