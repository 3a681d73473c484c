// Keys that reveal themselves (issue 32): new keys are `psk_`, 43 random base62 characters and the
// 6-character base62 CRC32 of those 43, and match the pattern published for secret scanners in
// docs/api.md and SECURITY.md. Faults caught: a key that does not match the published pattern; a
// checksum that is not the documented one (a scanner following the docs would reject our keys);
// a wrong checksum, a legacy key or a malformed one taken for the wrong format.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { crc32 } from 'node:zlib'
import { hashKey, keyChecksum, keyFormatOf, keyFormatOfPrefix } from '../../src/accounts/keys.rules.ts'
import { generateKey } from '../../src/keys/keys.service.ts'

/** The pattern a page publishes: the first `psk_…` regular expression in a code span or block. */
function publishedPattern (file: string): RegExp {
  const text = readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8')
  const found = /`(psk_\[0-9A-Za-z\]\{49\})`/.exec(text) ?? /^(psk_\[0-9A-Za-z\]\{49\})$/m.exec(text)
  assert.ok(found !== null, `${file} publishes the key pattern`)
  return new RegExp(`^${found[1]!}$`)
}

/** The checksum as docs/api.md describes it, written independently: CRC32, base62 0-9A-Za-z, 6 digits. */
function documentedChecksum (random: string): string {
  const digits = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
  let n = BigInt(crc32(Buffer.from(random, 'ascii')))
  let out = ''
  while (n > 0n) { out = digits[Number(n % 62n)]! + out; n /= 62n }
  return out.padStart(6, '0')
}

test('1,000 generated keys match the pattern docs/api.md and SECURITY.md publish, carry the documented checksum, and are all different', () => {
  const patterns = [publishedPattern('docs/api.md'), publishedPattern('SECURITY.md')]
  const seen = new Set<string>()
  for (let i = 0; i < 1000; i++) {
    const { key, hash, prefix } = generateKey()
    for (const pattern of patterns) assert.match(key, pattern)
    assert.equal(key.length, 53)
    assert.equal(key.slice(-6), documentedChecksum(key.slice(4, 47)), key)
    assert.equal(keyFormatOf(key), 'checksummed')
    assert.equal(hash, hashKey(key))
    assert.equal(prefix, key.slice(0, 16))
    assert.equal(keyFormatOfPrefix(prefix), 'checksummed')
    seen.add(key)
  }
  assert.equal(seen.size, 1000)
})

test('the random part is uniform over base62: every digit appears, at each position, about as often', () => {
  const counts = new Map<string, number>()
  for (let i = 0; i < 2000; i++) for (const c of generateKey().key.slice(4, 47)) counts.set(c, (counts.get(c) ?? 0) + 1)
  assert.equal(counts.size, 62)
  const expected = 2000 * 43 / 62
  // A biased draw (byte % 62 over 0..255) makes 0-7 about 25% more frequent than the rest.
  for (const [c, n] of counts) assert.ok(Math.abs(n - expected) < expected * 0.12, `${c}: ${n}, expected about ${Math.round(expected)}`)
})

test('a checksummed shape with a wrong checksum, and malformed keys, have no format; legacy keys keep theirs', () => {
  const { key } = generateKey()
  const random = key.slice(4, 47)
  assert.equal(keyChecksum(random), key.slice(47))
  const wrong = `psk_${random}${keyChecksum(random) === '000000' ? '000001' : '000000'}`
  assert.equal(keyFormatOf(wrong), null)
  // One character of the random part changed: the checksum no longer fits.
  const flipped = `psk_${random[0] === 'a' ? 'b' : 'a'}${random.slice(1)}${key.slice(47)}`
  assert.equal(keyFormatOf(flipped), null)
  const legacy = 'psk_' + Buffer.alloc(32, 7).toString('base64url')
  assert.equal(keyFormatOf(legacy), 'legacy')
  assert.equal(keyFormatOf('psk_' + '-'.repeat(43)), 'legacy')
  assert.equal(keyFormatOfPrefix(legacy.slice(0, 12)), 'legacy')
  for (const bad of [
    '',
    'psk_',
    key.slice(0, 52),
    key + 'x',
    key.replace('psk_', 'PSK_'),
    key.slice(0, 50) + '-' + key.slice(51),
    `psk_${'-'.repeat(49)}`,
    legacy.slice(0, 46),
    ' ' + legacy
  ]) {
    assert.equal(keyFormatOf(bad), null, JSON.stringify(bad))
  }
})
