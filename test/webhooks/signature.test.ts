// Standard Webhooks signatures, checked by the official `standardwebhooks` package: what every
// receiver will run.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Webhook } from 'standardwebhooks'
import { keptKeys, KEYS_KEPT, newSecret, sign, webhookHeaders } from '../../src/webhooks/signature.ts'

const body = JSON.stringify({ type: 'order.created', timestamp: '2026-11-20T10:00:00.000Z', data: { id: 7, status: 'placed', note: 'ünïcode ✓' } })
const now = (): number => Math.floor(Date.now() / 1000)

test('newSecret is whsec_ and the base64 of 32 random bytes, new each time', () => {
  const first = newSecret()
  assert.match(first, /^whsec_[A-Za-z0-9+/]{43}=$/)
  assert.equal(Buffer.from(first.slice(6), 'base64').length, 32)
  assert.notEqual(newSecret(), first)
})

test('a signed delivery verifies with the standardwebhooks package, which returns the payload', () => {
  const secret = newSecret()
  const headers = webhookHeaders({ id: 'evt_01', timestamp: now(), body, secrets: [secret] })
  assert.deepEqual(Object.keys(headers).sort(), ['webhook-id', 'webhook-signature', 'webhook-timestamp'])
  assert.equal(headers['webhook-id'], 'evt_01')
  assert.deepEqual(new Webhook(secret).verify(body, headers), JSON.parse(body))
})

test('the signature is byte for byte the specification\'s example and the package\'s own for the same id, timestamp and body', () => {
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'
  const timestamp = 1614265330
  const expected = new Webhook(secret).sign('msg_p5jXN8AQM9LWM0D4loKWxJek', new Date(timestamp * 1000), '{"test": 2432232314}')
  assert.equal(expected, 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=')
  assert.equal(sign({ id: 'msg_p5jXN8AQM9LWM0D4loKWxJek', timestamp, body: '{"test": 2432232314}', secrets: [secret] }), expected)
})

// Faults caught: the keys made once per secret (signature.ts, KEYS_KEPT) handing out another
// secret's key, or a stale one, once more secrets than it keeps have signed; and keeping more keys
// than the bound (one per secret ever seen: memory an instance never gets back), or fewer.
test('more secrets than the signer keeps keys for: each signature, first and again after the others, verifies with its own secret only', () => {
  const secrets = Array.from({ length: 1100 }, () => newSecret())
  for (const round of [1, 2]) {
    for (const [i, secret] of secrets.entries()) {
      const headers = webhookHeaders({ id: `evt_${round}_${i}`, timestamp: now(), body, secrets: [secret] })
      assert.deepEqual(new Webhook(secret).verify(body, headers), JSON.parse(body), `secret ${i}, round ${round}`)
      if (i % 100 === 0) assert.throws(() => new Webhook(secrets[(i + 1) % secrets.length]!).verify(body, headers))
    }
    assert.equal(keptKeys(), KEYS_KEPT, `round ${round}`)
  }
})

test('during a rotation the header carries one v1 signature per secret and each secret alone verifies', () => {
  const [old, current, stranger] = [newSecret(), newSecret(), newSecret()]
  const headers = webhookHeaders({ id: 'evt_02', timestamp: now(), body, secrets: [old, current] })
  const parts = headers['webhook-signature'].split(' ')
  assert.equal(parts.length, 2)
  for (const part of parts) assert.match(part, /^v1,[A-Za-z0-9+/]{43}=$/)
  assert.notEqual(parts[0], parts[1])
  assert.deepEqual(new Webhook(old).verify(body, headers), JSON.parse(body))
  assert.deepEqual(new Webhook(current).verify(body, headers), JSON.parse(body))
  // A secret that signed nothing must not verify: the package really checks.
  assert.throws(() => new Webhook(stranger).verify(body, headers), /No matching signature/)
})

test('a changed body, id or timestamp no longer verifies (the signature covers all three)', () => {
  const secret = newSecret()
  const timestamp = now()
  const headers = webhookHeaders({ id: 'evt_03', timestamp, body, secrets: [secret] })
  const webhook = new Webhook(secret)
  assert.throws(() => webhook.verify(body.replace('7', '8'), headers), /No matching signature/)
  assert.throws(() => webhook.verify(body, { ...headers, 'webhook-id': 'evt_04' }), /No matching signature/)
  assert.throws(() => webhook.verify(body, { ...headers, 'webhook-timestamp': String(timestamp - 1) }), /No matching signature/)
})

test('signing refuses no secret, a malformed secret and a timestamp that is not whole seconds, without quoting the secret', () => {
  const input = { id: 'evt_05', timestamp: now(), body }
  assert.throws(() => sign({ ...input, secrets: [] }), TypeError)
  for (const secret of ['whsec_', 'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'whsec_MfKQ9r8GKYqrTwjU!D8ILPZIo2LaLaSw', 'whsec_abc']) {
    assert.throws(
      () => sign({ ...input, secrets: [secret] }),
      (error: Error) => error instanceof TypeError && !error.message.includes(secret.slice(6, 20) || '\0'),
      secret
    )
  }
  assert.throws(() => sign({ ...input, timestamp: Date.now() / 1000, secrets: [newSecret()] }), TypeError)
})

test('a secret of any length in strict base64 signs, with two, one or no padding characters, and verifies with the package', () => {
  // Fault caught: a secret pattern that refused the padded forms a receiver's secret may take
  // (the official package accepts any base64 key).
  for (const bytes of [31, 32, 33]) {
    const secret = `whsec_${Buffer.alloc(bytes, 0xa5).toString('base64')}`
    assert.match(secret, [/==$/, /[^=]=$/, /[^=]$/][bytes - 31]!)
    const headers = webhookHeaders({ id: 'evt_06', timestamp: now(), body, secrets: [secret] })
    assert.deepEqual(new Webhook(secret).verify(body, headers), JSON.parse(body), secret)
  }
})

test('a secret with anything before whsec_ or a padding that leaves a lone character is refused: it would sign with other bytes', () => {
  const valid = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'
  const input = { id: 'evt_07', timestamp: now(), body }
  for (const secret of [`X${valid}`, ` ${valid}`, `${valid}A==`, `${valid}AB=`, `${valid}A`]) {
    assert.throws(() => sign({ ...input, secrets: [secret] }), { name: 'TypeError', message: 'a webhook secret is whsec_ followed by base64' }, secret)
  }
})

test('each refusal of sign says what the caller got wrong', () => {
  const input = { id: 'evt_08', timestamp: now(), body }
  assert.throws(() => sign({ ...input, secrets: [] }), { name: 'TypeError', message: 'a webhook is signed with at least one secret' })
  assert.throws(
    () => sign({ ...input, timestamp: 1.5, secrets: [newSecret()] }),
    { name: 'TypeError', message: 'the webhook timestamp is whole Unix seconds' }
  )
  assert.throws(() => sign({ ...input, secrets: ['whsec_'] }), { name: 'TypeError', message: 'a webhook secret is whsec_ followed by base64' })
})
