// Which proxies' X-Forwarded-For Fastify believes (TRUST_PROXY, config.ts), in the form Fastify
// takes. Never "trust any hop" (config.ts refuses it). A hop count is given as a function: Fastify
// takes a bare number as "trust nothing" since 5.x, which would make every client behind the load
// balancer one address, one quota and one ban.
import type { Config } from '../config.ts'

/** The hop at index i from the socket is trusted while i < hops; a list goes to proxy-addr as is. */
export function trustProxyOption (trust: Config['trustProxy']): false | string[] | ((address: string, hop: number) => boolean) {
  if (typeof trust !== 'number') return trust
  const hops = trust
  return (_address, hop) => hop < hops
}
