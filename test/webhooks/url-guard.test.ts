// The SSRF guard: every forbidden range and literal spelling is refused, public addresses pass,
// allowed hosts pass over http. Names resolve through stubs (no real DNS) but for one test of the
// system resolver on localhost.
import assert from 'node:assert/strict'
import { isIP } from 'node:net'
import { test } from 'node:test'
import {
  checkWebhookUrl,
  isForbiddenAddress,
  normalizeAllowedHost,
  URL_REFUSAL_MESSAGES,
  type Resolve
} from '../../src/webhooks/url-guard.ts'

const PUBLIC_V4 = '93.184.216.34'
const PUBLIC_V6 = '2606:2800:220:1:248:1893:25c8:1946'

/** A resolver that answers these addresses for every name and records the names it was asked. */
function resolveTo (...addresses: string[]): Resolve & { asked: string[] } {
  const asked: string[] = []
  const resolve = async (host: string) => {
    asked.push(host)
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }))
  }
  return Object.assign(resolve, { asked })
}

const noDns: Resolve = async () => { throw new Error('a literal host must not be resolved') }

// First and last address of every forbidden range, so a wrong prefix length shows.
const FORBIDDEN_ADDRESSES = [
  '0.0.0.0', '0.255.255.255',
  '10.0.0.0', '10.255.255.255',
  '100.64.0.0', '100.127.255.255',
  '127.0.0.1', '127.255.255.254',
  '169.254.0.1', '169.254.169.254', '169.254.255.255',
  '172.16.0.0', '172.31.255.255',
  '192.0.0.170', '192.0.2.1', '192.88.99.1',
  '192.168.0.0', '192.168.255.255',
  '198.18.0.0', '198.19.255.255',
  '198.51.100.7', '203.0.113.9',
  '224.0.0.1', '239.255.255.255',
  '240.0.0.1', '255.255.255.255',
  '::', '::1', '::7f00:1',
  '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', '::ffff:169.254.169.254', '::ffff:192.168.1.1', '::ffff:100.64.0.1', '::ffff:0.0.0.0', '::ffff:224.0.0.1',
  '0:0:0:0:0:ffff:ac10:0001',
  '::ffff:0:7f00:1',
  '64:ff9b::7f00:1', '64:ff9b::10.1.2.3', '64:ff9b::a9fe:a9fe', '64:ff9b:1::5db8:d822',
  '2002:7f00:1::', '2002:c0a8:101::1', '2002:a9fe:a9fe::',
  '2001::1', '2001:0:4136:e378:8000:63bf:3fff:fdd2', '2001:db8::1', '3fff::1',
  '100::1',
  'fc00::1', 'fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
  'fe80::1', 'fe80::1%eth0', 'febf:ffff::1',
  'fec0::1',
  'ff02::1', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'
]

// The neighbours just outside the ranges, and the public forms that embed a public IPv4.
const PUBLIC_ADDRESSES = [
  PUBLIC_V4, '1.1.1.1', '9.255.255.255', '11.0.0.0', '100.63.255.255', '100.128.0.0',
  '126.255.255.255', '128.0.0.0', '169.253.255.255', '169.255.0.0', '172.15.255.255', '172.32.0.0',
  '192.167.255.255', '192.169.0.0', '198.17.255.255', '198.20.0.0', '223.255.255.255',
  PUBLIC_V6, '2001:4860:4860::8888', '2a00:1450:4001:80b::200e',
  '::ffff:93.184.216.34', '64:ff9b::5db8:d822', '2002:5db8:d822::1'
]

test('isForbiddenAddress refuses the first and last address of every forbidden range, in IPv4, IPv6 and the IPv6 forms that embed IPv4', () => {
  const missed = FORBIDDEN_ADDRESSES.filter((address) => !isForbiddenAddress(address))
  assert.deepEqual(missed, [])
})

test('isForbiddenAddress accepts the neighbours just outside each range and public IPv4 reached through mapped, NAT64 and 6to4 forms', () => {
  const refused = PUBLIC_ADDRESSES.filter((address) => isForbiddenAddress(address))
  assert.deepEqual(refused, [])
})

test('isForbiddenAddress refuses what is no address at all (fail closed)', () => {
  for (const text of ['', 'localhost', '1.2.3', '::g', '1.2.3.4.5']) assert.equal(isForbiddenAddress(text), true, text)
})

test('a name that resolves to any forbidden address is refused forbidden_address, and the name is what was resolved', async () => {
  for (const address of FORBIDDEN_ADDRESSES) {
    const resolve = resolveTo(address)
    const result = await checkWebhookUrl('https://Hooks.Example.com/in', { allowedHosts: [], resolve })
    assert.deepEqual(result, { ok: false, reason: 'forbidden_address' }, address)
    assert.deepEqual(resolve.asked, ['hooks.example.com'])
  }
})

test('one forbidden address among public ones is enough to refuse: a later connection could pick it', async () => {
  const result = await checkWebhookUrl('https://hooks.example.com/', { allowedHosts: [], resolve: resolveTo(PUBLIC_V4, PUBLIC_V6, '10.0.0.8') })
  assert.deepEqual(result, { ok: false, reason: 'forbidden_address' })
})

test('a name that resolves only to public addresses is accepted with every address to connect to, in the resolver\'s order', async () => {
  const result = await checkWebhookUrl('https://hooks.example.com:8443/in?x=1', { allowedHosts: [], resolve: resolveTo(PUBLIC_V6, PUBLIC_V4) })
  assert.equal(result.ok, true)
  assert.ok(result.ok)
  assert.equal(result.url.href, 'https://hooks.example.com:8443/in?x=1')
  assert.deepEqual(result.addresses, [{ address: PUBLIC_V6, family: 6 }, { address: PUBLIC_V4, family: 4 }])
})

test('every spelling of a forbidden literal host is refused without asking DNS', async () => {
  const spellings = [
    'https://127.0.0.1/', 'https://2130706433/', 'https://0177.0.0.1/', 'https://0x7f.1/', 'https://127.1/',
    'https://0x7f000001/', 'https://017700000001/', 'https://%31%32%37.0.0.1/', 'https://１２７.０.０.１/',
    'https://127.0.0.1./', 'https://0/', 'https://169.254.169.254/latest/meta-data/', 'https://0xa9fea9fe/',
    'https://10.1/', 'https://3232235777/', 'https://[::1]/', 'https://[0:0:0:0:0:0:0:1]/', 'https://[0000::0001]:443/',
    'https://[::]/', 'https://[::ffff:127.0.0.1]/', 'https://[::ffff:7f00:1]/', 'https://[0:0:0:0:0:ffff:a9fe:a9fe]/',
    'https://[::127.0.0.1]/', 'https://[64:ff9b::127.0.0.1]/', 'https://[2002:7f00:1::]/', 'https://[FE80::1]/',
    'https://[fd12:3456::1]/'
  ]
  for (const url of spellings) {
    assert.deepEqual(await checkWebhookUrl(url, { allowedHosts: [], resolve: noDns }), { ok: false, reason: 'forbidden_address' }, url)
  }
})

test('a public literal host is accepted as its own only address', async () => {
  const v4 = await checkWebhookUrl('https://1572395042/', { allowedHosts: [], resolve: noDns })
  assert.deepEqual(v4.ok && v4.addresses, [{ address: PUBLIC_V4, family: 4 }])
  const v6 = await checkWebhookUrl(`https://[${PUBLIC_V6.toUpperCase()}]/`, { allowedHosts: [], resolve: noDns })
  assert.deepEqual(v6.ok && v6.addresses, [{ address: PUBLIC_V6, family: 6 }])
})

test('only https is accepted for a host that is not allowed', async () => {
  const options = { allowedHosts: ['localhost'], resolve: resolveTo(PUBLIC_V4) }
  for (const url of ['http://hooks.example.com/', 'ftp://hooks.example.com/', 'ws://hooks.example.com/', 'file:///etc/passwd', 'data:text/plain,x', 'javascript:alert(1)']) {
    assert.deepEqual(await checkWebhookUrl(url, options), { ok: false, reason: 'scheme_not_allowed' }, url)
  }
})

test('a URL with a user name or password is refused, even on an allowed host', async () => {
  const options = { allowedHosts: ['localhost'], resolve: resolveTo(PUBLIC_V4) }
  for (const url of ['https://user:pass@hooks.example.com/', 'https://user@hooks.example.com/', 'https://:pass@hooks.example.com/', 'http://a:b@localhost/', 'https://127.0.0.1:80@hooks.example.com/']) {
    assert.deepEqual(await checkWebhookUrl(url, options), { ok: false, reason: 'userinfo_not_allowed' }, url)
  }
})

test('what is no absolute URL is refused invalid_url', async () => {
  for (const url of ['', 'hooks.example.com/in', '/in', 'https://', 'https://[::1/', 'https://a b/']) {
    assert.deepEqual(
      await checkWebhookUrl(url, { allowedHosts: [], resolve: resolveTo(PUBLIC_V4) }),
      { ok: false, reason: 'invalid_url' },
      url
    )
  }
})

test('a name that does not resolve, resolves to nothing or to something that is no address is refused unresolvable', async () => {
  const failing: Resolve = async () => { throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' }) }
  for (const resolve of [failing, resolveTo(), resolveTo(PUBLIC_V4, 'not-an-address')]) {
    assert.deepEqual(await checkWebhookUrl('https://hooks.example.com/', { allowedHosts: [], resolve }), { ok: false, reason: 'unresolvable' })
  }
})

test('an allowed host passes over http and https whatever it resolves to, matched by name case-insensitively', async () => {
  const resolve = resolveTo('127.0.0.1', '::1')
  for (const url of ['http://localhost:3000/hooks', 'https://LocalHost/hooks', 'http://receiver.test/']) {
    const result = await checkWebhookUrl(url, { allowedHosts: ['LOCALHOST', ' receiver.test '], resolve })
    assert.ok(result.ok, url)
    assert.deepEqual(result.addresses, [{ address: '127.0.0.1', family: 4 }, { address: '::1', family: 6 }])
  }
})

test('an allowed literal address matches every spelling of it, IPv6 with or without brackets', async () => {
  const cases: [string[], string, string][] = [
    [['127.0.0.1'], 'http://127.1:8080/', '127.0.0.1'],
    [['127.0.0.1'], 'http://2130706433/', '127.0.0.1'],
    [['0x7f.1'], 'https://127.0.0.1/', '127.0.0.1'],
    [['::1'], 'http://[0:0:0:0:0:0:0:1]:9000/', '::1'],
    [['[0::1]'], 'http://[::1]/', '::1'],
    [['10.0.0.5'], 'http://10.0.0.5/', '10.0.0.5']
  ]
  for (const [allowedHosts, url, address] of cases) {
    const result = await checkWebhookUrl(url, { allowedHosts, resolve: noDns })
    assert.ok(result.ok, url)
    assert.deepEqual(result.addresses.map((entry) => entry.address), [address], url)
  }
})

test('the allowed list lets only its own hosts through: another host on the same address is checked as usual', async () => {
  const options = { allowedHosts: ['localhost'], resolve: resolveTo('127.0.0.1') }
  assert.deepEqual(await checkWebhookUrl('http://127.0.0.1/', options), { ok: false, reason: 'scheme_not_allowed' })
  assert.deepEqual(await checkWebhookUrl('https://127.0.0.1/', options), { ok: false, reason: 'forbidden_address' })
  assert.deepEqual(await checkWebhookUrl('https://localhost.evil.example/', options), { ok: false, reason: 'forbidden_address' })
  assert.deepEqual(await checkWebhookUrl('https://localhost./', options), { ok: false, reason: 'forbidden_address' })
})

test('normalizeAllowedHost gives the URL parser\'s spelling, and null for an entry with a port, path or user', () => {
  assert.equal(normalizeAllowedHost(' Hooks.Test '), 'hooks.test')
  assert.equal(normalizeAllowedHost('0177.0.0.1'), '127.0.0.1')
  assert.equal(normalizeAllowedHost('0:0::1'), '::1')
  assert.equal(normalizeAllowedHost('[::1]'), '::1')
  for (const entry of ['', '  ', 'localhost:3000', 'a/b', 'u@host', 'a b', 'http://x']) assert.equal(normalizeAllowedHost(entry), null, entry)
})

test('without a resolver the system resolver is asked: https://localhost/ is refused as loopback', async () => {
  assert.deepEqual(await checkWebhookUrl('https://localhost/', { allowedHosts: [] }), { ok: false, reason: 'forbidden_address' })
})

/** An IPv4 address as the two 16-bit groups an IPv6 address carries it in. */
function groupsOf (ipv4: string): string {
  const [a, b, c, d] = ipv4.split('.').map(Number) as [number, number, number, number]
  return `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
}

test('every forbidden IPv4 address is refused in its mapped, NAT64 and 6to4 forms, and every public one accepted in them', () => {
  // Faults caught: an embedded address read with its low 16 bits lost (192.88.99.1 read as
  // 192.88.0.0, which is public), a form whose embedded address is not checked at all.
  const forbidden = FORBIDDEN_ADDRESSES.filter((address) => isIP(address) === 4)
  const publicOnes = PUBLIC_ADDRESSES.filter((address) => isIP(address) === 4)
  const forms = (ipv4: string): string[] => [`::ffff:${ipv4}`, `64:ff9b::${ipv4}`, `64:ff9b::${groupsOf(ipv4)}`, `2002:${groupsOf(ipv4)}::1`]
  assert.deepEqual(forbidden.flatMap(forms).filter((address) => !isForbiddenAddress(address)), [])
  assert.deepEqual(publicOnes.flatMap(forms).filter((address) => isForbiddenAddress(address)), [])
})

test('an IPv6 address outside the forms that embed IPv4 is judged as IPv6, whatever its last 32 bits spell', () => {
  // Faults caught: the last 32 bits of any address read as an IPv4 one (a unique-local address
  // ending in a public IPv4 passed; a public one ending in 10.0.0.1 was refused), and a form
  // recognised by fewer than its 96 fixed bits: a global address whose low groups read
  // ffff:a00:1 is no IPv4-mapped address.
  const forbidden = ['fc00::5db8:d822', 'fe80::5db8:d822', '2001:db8::5db8:d822', '2001::5db8:d822', '100::5db8:d822', 'ff02::5db8:d822', 'fec0::5db8:d822']
  assert.deepEqual(forbidden.filter((address) => !isForbiddenAddress(address)), [])
  const publicOnes = [
    '2606:4700::a00:1', '2a00::ffff:a00:1', '2a00:ff9b::a00:1',
    // One group away from ::ffff:0:0/96 (the mapped form), each of its first six groups in turn.
    '0:5::ffff:a00:1', '0:0:5::ffff:a00:1', '::5:0:ffff:a00:1', '::5:ffff:a00:1', '::5:a00:1',
    // One group away from 64:ff9b::/96 (NAT64), each of its first six groups in turn.
    '64:ff9a::a00:1', '64:ff9b:5::a00:1', '64:ff9b:0:5::a00:1', '64:ff9b::5:0:a00:1', '64:ff9b::5:a00:1'
  ]
  assert.deepEqual(publicOnes.filter((address) => isForbiddenAddress(address)), [])
})

test('an allowed host passes over http and https only: another scheme is refused on it too', async () => {
  const options = { allowedHosts: ['localhost'], resolve: resolveTo('127.0.0.1') }
  for (const url of ['ftp://localhost/', 'ws://localhost/', 'wss://localhost/', 'gopher://localhost/']) {
    assert.deepEqual(await checkWebhookUrl(url, options), { ok: false, reason: 'scheme_not_allowed' }, url)
  }
})

test('each refusal tells the client what to change, and none names an address the server resolved', () => {
  // These are the messages of the 400 a caller gets when creating or changing an endpoint.
  assert.deepEqual(URL_REFUSAL_MESSAGES, {
    invalid_url: 'the webhook URL is not a valid absolute URL',
    scheme_not_allowed: 'the webhook URL must use https',
    userinfo_not_allowed: 'the webhook URL must not carry a user name or password',
    unresolvable: 'the webhook URL host does not resolve',
    forbidden_address: 'the webhook URL host must resolve only to public addresses'
  })
})
