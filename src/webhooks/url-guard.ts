// The SSRF guard of webhook URLs (issue 31, SECURITY.md): a URL is accepted only when it is https
// and its host resolves to public addresses alone, and the caller then connects to one of exactly
// those addresses (attempt.ts pins it), so a second DNS answer cannot slip in between the check
// and the connection. It runs when an endpoint is created or changed and again before every attempt.
//
// Literal hosts are normalized by the WHATWG URL parser before any check: 2130706433, 0177.0.0.1,
// 0x7f.1, 127.1, %31%32%37.0.0.1 and full-width digits all become 127.0.0.1, and IPv6 becomes its
// compressed form, so the address lists below see one spelling only.
import { lookup } from 'node:dns/promises'
import { BlockList, isIP } from 'node:net'

export interface ResolvedAddress {
  address: string
  family: 4 | 6
}

/** Resolves a host name to every address it has (the default asks the system resolver, like a connection would). */
export type Resolve = (host: string) => Promise<readonly { address: string; family: number }[]>

export interface UrlGuardOptions {
  /** WEBHOOK_ALLOWED_HOSTS: host names or literal addresses allowed over http or https, whatever they resolve to. */
  allowedHosts: readonly string[]
  resolve?: Resolve
}

export type UrlRefusal = 'invalid_url' | 'scheme_not_allowed' | 'userinfo_not_allowed' | 'unresolvable' | 'forbidden_address'

export type UrlCheck =
  | { ok: true; url: URL; addresses: ResolvedAddress[] }
  | { ok: false; reason: UrlRefusal }

/**
 * What a client is told for each refusal. None names a resolved address: the server's resolver
 * may see internal names, and the answer must not map them out for a caller.
 */
export const URL_REFUSAL_MESSAGES: Record<UrlRefusal, string> = {
  invalid_url: 'the webhook URL is not a valid absolute URL',
  scheme_not_allowed: 'the webhook URL must use https',
  userinfo_not_allowed: 'the webhook URL must not carry a user name or password',
  unresolvable: 'the webhook URL host does not resolve',
  forbidden_address: 'the webhook URL host must resolve only to public addresses'
}

const FORBIDDEN_V4: readonly (readonly [string, number])[] = [
  ['0.0.0.0', 8], // "this network", 0.0.0.0 reaches the local host on Linux
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, the cloud metadata service 169.254.169.254 included
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments (NAT64 discovery, DS-Lite…)
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast, deprecated
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4] // reserved, 255.255.255.255 (broadcast) included
]

// The forms that embed an IPv4 address (IPv4-mapped ::ffff:0:0/96, NAT64 64:ff9b::/96, 6to4
// 2002::/16) are not listed: forbiddenAddress checks the embedded address against FORBIDDEN_V4
// instead, so a public IPv4 reached through NAT64 or 6to4 stays allowed and a private one does not.
const FORBIDDEN_V6: readonly (readonly [string, number])[] = [
  ['::', 96], // unspecified ::, loopback ::1 and the deprecated IPv4-compatible ::a.b.c.d
  ['::ffff:0:0:0', 96], // SIIT IPv4-translated addresses: never a public host's
  ['64:ff9b:1::', 48], // local-use NAT64 (RFC 8215): translates into private networks
  ['100::', 64], // discard-only
  ['2001::', 23], // IETF protocol assignments: Teredo 2001::/32 (its embedded address is obfuscated), benchmarking, ORCHID
  ['2001:db8::', 32], // documentation
  ['3fff::', 20], // documentation
  ['fc00::', 7], // unique-local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local, deprecated but still routed inside some networks
  ['ff00::', 8] // multicast
]

function blockList (v4: typeof FORBIDDEN_V4, v6: typeof FORBIDDEN_V6): BlockList {
  const list = new BlockList()
  for (const [network, prefix] of v4) list.addSubnet(network, prefix, 'ipv4')
  for (const [network, prefix] of v6) list.addSubnet(network, prefix, 'ipv6')
  return list
}

const FORBIDDEN = blockList(FORBIDDEN_V4, FORBIDDEN_V6)

/** The eight 16-bit groups of a valid IPv6 address (zone removed, a trailing dotted quad folded in). */
function ipv6Groups (address: string): number[] {
  let text = address.split('%')[0] ?? ''
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text)
  if (quad !== null) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number]
    text = text.slice(0, quad.index) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head = '', tail] = text.split('::')
  const parse = (part: string): number[] => part === '' ? [] : part.split(':').map((group) => parseInt(group, 16))
  const left = parse(head)
  const right = tail === undefined ? [] : parse(tail)
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right]
}

function ipv4FromGroups (high: number, low: number): string {
  return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`
}

/** The IPv4 address an IPv6 address carries and is routed to (mapped, NAT64, 6to4), or null. */
function embeddedIpv4 (groups: readonly number[]): string | null {
  const [g0, g1, g2, g3, g4, g5, g6 = 0, g7 = 0] = groups
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0xffff) return ipv4FromGroups(g6, g7)
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return ipv4FromGroups(g6, g7)
  if (g0 === 0x2002) return ipv4FromGroups(g1 ?? 0, g2 ?? 0)
  return null
}

/**
 * True when a connection to this address could reach something that is not the public internet;
 * anything unparsable counts as forbidden.
 */
export function isForbiddenAddress (address: string): boolean {
  const family = isIP(address)
  if (family === 4) return FORBIDDEN.check(address, 'ipv4')
  if (family !== 6) return true
  const groups = ipv6Groups(address)
  const v4 = embeddedIpv4(groups)
  if (v4 !== null) return FORBIDDEN.check(v4, 'ipv4')
  return FORBIDDEN.check(groups.map((group) => group.toString(16)).join(':'), 'ipv6')
}

/** A URL's hostname without the brackets of an IPv6 literal. */
export function bareHostname (url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
}

/**
 * An allowed-hosts entry in the spelling URL.hostname gives (lower case, IPv4 in dotted decimal,
 * IPv6 compressed without brackets), or null when it is no host at all.
 */
export function normalizeAllowedHost (entry: string): string | null {
  const text = entry.trim()
  if (text === '') return null
  const bracketed = isIP(text) === 6 ? `[${text}]` : text
  try {
    const url = new URL(`http://${bracketed}/`)
    // A port, a path or a user name means the entry is no bare host.
    if (url.host !== url.hostname || url.username !== '' || url.href !== `http://${url.hostname}/`) return null
    return bareHostname(url)
  } catch {
    return null
  }
}

const systemResolve: Resolve = (host) => lookup(host, { all: true, order: 'verbatim' })

/** Checks a webhook URL (see the top of this file) and returns the addresses a delivery may connect to. */
export async function checkWebhookUrl (text: string, options: UrlGuardOptions): Promise<UrlCheck> {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return { ok: false, reason: 'invalid_url' }
  }
  if (url.username !== '' || url.password !== '') return { ok: false, reason: 'userinfo_not_allowed' }
  const host = bareHostname(url)
  const allowed = options.allowedHosts.some((entry) => normalizeAllowedHost(entry) === host)
  const schemeOk = url.protocol === 'https:' || (allowed && url.protocol === 'http:')
  if (!schemeOk) return { ok: false, reason: 'scheme_not_allowed' }

  const addresses = await addressesOf(host, options.resolve ?? systemResolve)
  if (addresses === null || addresses.length === 0) return { ok: false, reason: 'unresolvable' }
  // Every address, not only the first: a later connection (another attempt, a happy-eyeballs
  // fallback) must not be able to reach a forbidden one.
  if (!allowed && addresses.some((entry) => isForbiddenAddress(entry.address))) return { ok: false, reason: 'forbidden_address' }
  return { ok: true, url, addresses }
}

/**
 * The host's addresses, a literal being its own; null when resolution fails or answers something
 * that is no address.
 */
async function addressesOf (host: string, resolve: Resolve): Promise<ResolvedAddress[] | null> {
  const literal = isIP(host)
  if (literal !== 0) return [{ address: host, family: literal === 4 ? 4 : 6 }]
  let answers: readonly { address: string }[]
  try {
    answers = await resolve(host)
  } catch {
    return null
  }
  const addresses: ResolvedAddress[] = []
  for (const { address } of answers) {
    const family = isIP(address)
    if (family === 0) return null
    addresses.push({ address, family: family === 4 ? 4 : 6 })
  }
  return addresses
}
