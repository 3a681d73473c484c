// The limiter subject of a caller without a valid key: its client address, an IPv6 address by
// its /64 (docs/product.md section 4).

/**
 * The limiter subject of a caller without a valid key. An IPv4 address stands alone. An IPv6
 * address is charged by its /64 prefix, the block that one host or one customer line usually
 * gets, so walking through the 2^64 addresses of one's own block escapes nothing. An IPv4-mapped
 * IPv6 address (::ffff:a.b.c.d) is its IPv4 address.
 */
export function subjectOfAddress (address: string): string {
  if (!address.includes(':')) return `ip:${address}`
  const lower = address.toLowerCase()
  if (lower.startsWith('::ffff:') && lower.includes('.')) return `ip:${lower.slice(7)}`
  const zone = lower.indexOf('%')
  const bare = zone === -1 ? lower : lower.slice(0, zone)
  const gap = bare.indexOf('::')
  const head = (gap === -1 ? bare : bare.slice(0, gap)).split(':').filter((g) => g !== '')
  const tail = gap === -1 ? [] : bare.slice(gap + 2).split(':').filter((g) => g !== '')
  const groups = gap === -1 ? head : [...head, ...new Array<string>(Math.max(0, 8 - head.length - tail.length)).fill('0'), ...tail]
  return `ip6:${groups.slice(0, 4).map((g) => Number.parseInt(g, 16).toString(16)).join(':')}::/64`
}
