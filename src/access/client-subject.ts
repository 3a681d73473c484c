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
  // Only the first four of the eight groups count. A zone index (fe80::1%eth0) rides on the last
  // group, past them, and is left as is; so is an empty group after a final '::'.
  const gap = lower.indexOf('::')
  let groups: string[]
  if (gap === -1) {
    groups = lower.split(':')
  } else {
    const head = lower.slice(0, gap).split(':').filter((g) => g !== '')
    const tail = lower.slice(gap + 2).split(':')
    groups = [...head, ...new Array<string>(Math.max(0, 8 - head.length - tail.length)).fill('0'), ...tail]
  }
  return `ip6:${groups.slice(0, 4).map((g) => Number.parseInt(g, 16).toString(16)).join(':')}::/64`
}
