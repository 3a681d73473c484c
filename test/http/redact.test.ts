// What may be logged of a URL, a text and an error (src/http/redact.ts), output for input: the
// secret parameters' values, a key spelt plainly or with escapes at any depth, and the text
// around them kept as it was. Written against the survivors of `npm run mutate -- redact`
// (docs/testing.md); the HTTP tests show the same through a running server's log.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { cachedNameCount, errorLogView, keyParameterOf, logArgumentView, redactText, redactUrl, requestLogView } from '../../src/http/redact.ts'

const R = '[redacted]'

test('every key parameter name is refused, decoded and case-folded, and other names are not', () => {
  for (const name of ['api_key', 'apikey', 'api-key', 'key', 'x-api-key', 'access_token', 'token', 'auth', 'authorization', 'bearer']) {
    assert.equal(keyParameterOf(`/v1/pets?${name}=psk_x`), name)
    assert.equal(keyParameterOf(`/v1/pets?limit=5&${name.toUpperCase()}=1`), name)
  }
  // Escaped, with `+` for a space around it, or without a value: still the name of a key.
  assert.equal(keyParameterOf('/v1/pets?API%5FKEY=x'), 'api_key')
  assert.equal(keyParameterOf('/v1/pets?+token+=x'), 'token')
  assert.equal(keyParameterOf('/v1/pets?%20key=x'), 'key')
  assert.equal(keyParameterOf('/v1/pets?key&limit=1'), 'key')
  assert.equal(keyParameterOf('/v1/pets?limit&bearer'), 'bearer')
  // The first one found is named.
  assert.equal(keyParameterOf('/v1/pets?token=1&key=2'), 'token')
  // Secret names that are not key parameters, near misses, and no query at all.
  for (const url of ['/v1/pets?password=x', '/v1/pets?keys=1', '/v1/pets?monkey=1', '/v1/pets?id=key', '/v1/pets/key', '/v1/pets', '/v1/pets?', '/v1/pets?%zz=1', '/v1/pets?key%=1', '/v1/pets?api+key=1']) {
    assert.equal(keyParameterOf(url), null, url)
  }
  // The query starts after the first `?` only, wherever that is.
  assert.equal(keyParameterOf('/v1/key?x=1'), null)
  assert.equal(keyParameterOf('/?key=1'), 'key')
})

test('the value of every secret-looking query parameter is redacted, and nothing else in the URL', () => {
  const secrets = [
    'api_key', 'apikey', 'api-key', 'API_KEY', 'x-api-key', 'key', 'Key', 'access_token', 'accesstoken', 'access-token',
    'refresh_token', 'refreshtoken', 'refresh-token', 'id_token', 'idtoken', 'id-token', 'token', 'auth', 'authorization',
    'bearer', 'password', 'PASSWORD', 'passwd', 'pwd', 'secret', 'client_secret', 'clientsecret', 'client-secret', 'signature',
    'sig', 'session', 'sessionid'
  ]
  for (const name of secrets) {
    assert.equal(redactUrl(`/v1/pets?limit=5&${name}=hunter2&cursor=abc`), `/v1/pets?limit=5&${name}=${R}&cursor=abc`, name)
    assert.equal(redactUrl(`/v1/pets?${name}=hunter2`), `/v1/pets?${name}=${R}`, name)
  }
  const plain = ['monkey', 'keys', 'keyring', 'author', 'tokens', 'xtoken', 'signatures', 'sessions', 'passwords', 'apikeys', 'id', 'secretary', 'xsig']
  for (const name of plain) assert.equal(redactUrl(`/v1/pets?${name}=hunter2`), `/v1/pets?${name}=hunter2`, name)
  // Decoded names; a name without a value before a secret one; a valueless secret name.
  assert.equal(redactUrl('/v1/pets?pass%77ord=hunter2&id=1'), `/v1/pets?pass%77ord=${R}&id=1`)
  assert.equal(redactUrl('/v1/pets?+token=hunter2'), `/v1/pets?+token=${R}`)
  assert.equal(redactUrl('/v1/pets?flag&secret=s3&x=y'), `/v1/pets?flag&secret=${R}&x=y`)
  assert.equal(redactUrl('/v1/pets?secret&x=hunter2'), '/v1/pets?secret&x=hunter2')
  assert.equal(redactUrl('/v1/pets?tokens&secret=s3'), `/v1/pets?tokens&secret=${R}`)
  assert.equal(redactUrl('/?token=hunter2'), `/?token=${R}`)
  assert.equal(redactUrl('/v1/pets?a=1&&token=t&'), `/v1/pets?a=1&&token=${R}&`)
  // A value holding `=` is cut whole; nothing before the `?` changes.
  assert.equal(redactUrl('/v1/token/pets?token=a=b'), `/v1/token/pets?token=${R}`)
  assert.equal(redactUrl('/v1/pets?id=1'), '/v1/pets?id=1')
  assert.equal(redactUrl('/v1/pets'), '/v1/pets')
})

test('text shaped like a key is cut out of a URL wherever it sits, whatever its case', () => {
  assert.equal(redactUrl('/v1/pets/psk_abcDEF123-_x/rest'), `/v1/pets/${R}/rest`)
  assert.equal(redactUrl('/v1/pets?id=PSK_ABC&n=psk_def'), `/v1/pets?id=${R}&n=${R}`)
  assert.equal(redactUrl('/v1/pets/Psk_a.json'), `/v1/pets/${R}.json`)
  // `psk_` alone is not a key (a key has characters after its prefix); `psk` without `_` is not one.
  assert.equal(redactUrl('/v1/psk_/pets'), '/v1/psk_/pets')
  assert.equal(redactUrl('/v1/pets?name=pskabc'), '/v1/pets?name=pskabc')
})

test('a key spelt with escapes, once or many times encoded, is cut out with its part of the URL, and other escapes stay', () => {
  assert.equal(redactUrl('/v1/pets/%70sk_abc/x?id=1'), `/v1/pets/${R}/x?id=1`)
  assert.equal(redactUrl('/v1/pets?q=psk%5Fabc&id=1'), `/v1/pets?q=${R}&id=1`)
  assert.equal(redactUrl('/v1/pets?q=psk%5fabc&id=1'), `/v1/pets?q=${R}&id=1`)
  assert.equal(redactUrl('/v1/pets?q=%50%53%4B%5Fabc'), `/v1/pets?q=${R}`)
  assert.equal(redactUrl('/v1/pets?q=%70%73%6b_abc'), `/v1/pets?q=${R}`)
  assert.equal(redactUrl('/v1/pets?q=%2570sk_abc'), `/v1/pets?q=${R}`)
  assert.equal(redactUrl('/v1/pets?q=%25252570sk_abc'), `/v1/pets?q=${R}`)
  // An escape built of escapes: `%2` then `%35` gives `%25`, that is `%`, before `70sk_`.
  assert.equal(redactUrl('/v1/pets?q=%2%35%37%30sk_abc'), `/v1/pets?q=${R}`)
  assert.equal(redactUrl('/v1/a;%70sk_x;b'), `/v1/a;${R};b`)
  // A `%` before letters that are no hex digits stays a `%`: it must not swallow `ps` of the key.
  assert.equal(redactUrl('/v1/pets?q=%p%73k_abc'), `/v1/pets?q=${R}`)
  assert.equal(redactText('%P%53K_abc'), R)
  // Escapes that decode to no key, malformed ones, and a lone `%`, as sent.
  for (const url of ['/v1/pets?name=caf%C3%A9', '/v1/pets?name=%7', '/v1/pets?n=%zz', '/v1/pets?n=100%', '/v1/p%73k/pets', '/v1/pets?n=%70s%6B']) {
    assert.equal(redactUrl(url), url)
  }
  // A long part is decoded whole: the key at its end is found.
  const long = `/v1/pets?q=${'a'.repeat(5000)}%70sk_abc`
  assert.equal(redactUrl(long), `/v1/pets?q=${R}`)
  assert.equal(redactUrl(`/v1/pets?q=${'%41'.repeat(5000)}`), `/v1/pets?q=${'%41'.repeat(5000)}`)
})

test('text keeps everything but a key, spelt plainly or escaped', () => {
  assert.equal(redactText('field "psk_abc123" is unknown'), `field "${R}" is unknown`)
  assert.equal(redactText('Field "%70sk_abc123" is unknown'), `Field "${R}" is unknown`)
  assert.equal(redactText('%70sk_abc'), R)
  assert.equal(redactText('{"k":"psk%5Fab.c~d+e-f"}'), `{"k":"${R}"}`)
  assert.equal(redactText('a %2570SK_x b PSK_y'), `a ${R} b ${R}`)
  assert.equal(redactText('100% sure, 50%-off'), '100% sure, 50%-off')
  assert.equal(redactText('/v1/pets?id=%41'), '/v1/pets?id=%41')
  assert.equal(redactText('no secret here'), 'no secret here')
  assert.equal(redactText(''), '')
})

test('a text far longer than a URL is decoded in pieces: no error, and a key at its end is found', () => {
  // Decoding spread the whole text into one call once: 300,000 arguments overflow the stack.
  const text = `${'a'.repeat(300_000)}%70sk_abc`
  assert.equal(redactText(`"${text}"`), `"${R}"`)
})

test('the cache of query names stays bounded, and keeps names of at most 64 characters', () => {
  // Starting from whatever the other tests left: it empties itself when it holds 256 names.
  const before = cachedNameCount()
  assert.ok(before <= 256)
  for (let i = 0; i < 300; i++) redactUrl(`/v1/pets?bounded${i}=x`)
  const filled = ((before + 300 - 1) % 256) + 1
  assert.equal(cachedNameCount(), filled)
  redactUrl(`/v1/pets?${'n'.repeat(64)}=x`)
  assert.equal(cachedNameCount(), (filled % 256) + 1)
  redactUrl(`/v1/pets?${'m'.repeat(65)}=x`)
  assert.equal(cachedNameCount(), (filled % 256) + 1)
  // Long names are still classified: not cached is not skipped.
  assert.equal(redactUrl(`/v1/pets?${'m'.repeat(65)}=x&password=p`), `/v1/pets?${'m'.repeat(65)}=x&password=${R}`)
})

test('a request as a log line shows it: its fields, the URL redacted', () => {
  const view = requestLogView({ method: 'GET', url: '/v1/pets?token=t&id=psk_k', host: 'shop.example', ip: '10.0.0.1', headers: { 'accept-version': '1' }, socket: { remotePort: 4242 } })
  assert.deepEqual(view, { method: 'GET', url: `/v1/pets?token=${R}&id=${R}`, version: '1', host: 'shop.example', remoteAddress: '10.0.0.1', remotePort: 4242 })
  assert.deepEqual(requestLogView({ method: 'PUT', url: '/v1/pets', socket: null }), {
    method: 'PUT',
    url: '/v1/pets',
    version: undefined,
    host: undefined,
    remoteAddress: undefined,
    remotePort: undefined
  })
})

test('an error as a log line shows it: every text redacted, its code and cause kept, nothing added', () => {
  const cause = new TypeError('bad psk_cause')
  const error = Object.assign(new Error('key psk_message in %70sk_escaped', { cause }), { code: 'E_psk_code' })
  const view = errorLogView(error) as Record<string, unknown>
  assert.equal(view.type, 'Error')
  assert.equal(view.message, `key ${R} in ${R}`)
  assert.equal(view.code, `E_${R}`)
  assert.match(String(view.stack), /^Error: key \[redacted\] in \[redacted\]\n/)
  assert.doesNotMatch(String(view.stack), /psk_|%70sk/)
  const inner = view.cause as Record<string, unknown>
  assert.equal(inner.type, 'TypeError')
  assert.equal(inner.message, `bad ${R}`)
  assert.equal('cause' in inner || 'code' in inner, false)

  // A numeric code is kept as it is; an error without a stack shows none.
  const bare = Object.assign(new RangeError('plain'), { code: 42 })
  delete (bare as { stack?: string }).stack
  assert.deepEqual(errorLogView(bare), { type: 'RangeError', message: 'plain', code: 42 })
  // Not an Error: a string is redacted, anything else is as it was.
  assert.equal(errorLogView('thrown psk_text'), `thrown ${R}`)
  assert.equal(errorLogView(7), 7)
  const thing = { message: 'psk_x' }
  assert.equal(errorLogView(thing), thing)
})

test('a logging call\'s arguments are redacted one level deep', () => {
  assert.equal(logArgumentView('msg psk_x'), `msg ${R}`)
  const error = logArgumentView(new Error('psk_y')) as Record<string, unknown>
  assert.deepEqual([error.type, error.message, String(error.stack).startsWith(`Error: ${R}\n`)], ['Error', R, true])
  for (const value of [null, undefined, 5, true]) assert.equal(logArgumentView(value), value)
  const list = ['psk_z']
  assert.equal(logArgumentView(list), list)
  const nested = { deeper: 'psk_deep' }
  const view = logArgumentView({ reason: 'key psk_a', count: 3, err: 'failed psk_b', error: new Error('psk_c'), nested }) as Record<string, unknown>
  assert.deepEqual(Object.keys(view), ['reason', 'count', 'err', 'error', 'nested'])
  assert.equal(view.reason, `key ${R}`)
  assert.equal(view.count, 3)
  assert.equal(view.err, `failed ${R}`)
  assert.equal((view.error as { message: string }).message, R)
  assert.equal(view.nested, nested)
})
