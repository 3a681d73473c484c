// The stand-in load generator, for machines without wrk: autocannon in a process of its own
// (bench/load.ts starts it, pinned to the generator's core), so it never shares an event loop
// with the parent or a server. It prints one BENCH_RESULT line, the same shape wrk's script
// prints, and exits.
import { randomBytes } from 'node:crypto'
import { createRequire } from 'node:module'
import { formatResult, gridFromSorted, type AutocannonJob, type Part } from './load.ts'

// autocannon (CommonJS, no bundled types): the part of its programmatic API used here.
interface AutocannonRequest {
  method?: 'GET' | 'POST'
  path?: string
  body?: string
  headers?: Record<string, string>
  setupRequest?: (request: SetupRequest) => SetupRequest
}
interface SetupRequest { path: string; headers?: Record<string, string> }
interface AutocannonOptions {
  url: string
  connections: number
  duration: number
  method?: 'GET' | 'POST'
  headers?: Record<string, string>
  body?: string
  requests?: AutocannonRequest[]
  /** Seconds before a request counts as a timeout. */
  timeout?: number
}
interface AutocannonResult {
  duration: number
  errors: number
  timeouts: number
  non2xx: number
  requests: { total: number }
}
interface AutocannonRun extends PromiseLike<AutocannonResult> {
  /** responseTime in ms, for every response, 2xx or not; each client's responses in its order. */
  on (event: 'response', listener: (client: object, statusCode: number, bytes: number, responseTime: number) => void): this
}
const autocannon = createRequire(import.meta.url)('autocannon') as (options: AutocannonOptions) => AutocannonRun

/** Samples in µs, grown as needed. */
class Samples {
  values = new Float64Array(1 << 15)
  n = 0
  bad = 0
  add (us: number): void {
    if (this.n === this.values.length) {
      const bigger = new Float64Array(this.values.length * 2)
      bigger.set(this.values)
      this.values = bigger
    }
    this.values[this.n++] = us
  }

  part (): Part {
    return { count: this.n, bad: this.bad, latencyUs: gridFromSorted(this.values.subarray(0, this.n).sort()) }
  }
}

async function main (): Promise<void> {
  const job = JSON.parse(process.argv[2] ?? '') as AutocannonJob
  const { load } = job
  const pick = (paths: string[]) => (request: { path: string }) => ({
    ...request,
    path: paths[Math.floor(Math.random() * paths.length)]!
  })
  const options: AutocannonOptions = {
    url: job.base,
    connections: job.connections,
    duration: job.seconds,
    timeout: 10,
    headers: load.headers
  }
  let ordering: AutocannonOptions | null = null
  if (load.kind === 'static') {
    Object.assign(options, { url: job.base + load.path, method: load.method })
    if (load.body !== undefined) Object.assign(options, { body: load.body, headers: { ...load.headers, 'content-type': 'application/json' } })
    if (load.freshIdempotencyKeys === true) {
      const prefix = `bench-${randomBytes(8).toString('hex')}-`
      let count = 0
      options.requests = [{
        method: load.method,
        ...(load.body !== undefined && { body: load.body }),
        setupRequest: (request) => ({ ...request, headers: { ...options.headers, 'idempotency-key': prefix + String(++count) } })
      }]
    }
  } else if (load.kind === 'paths') {
    options.requests = [{ method: 'GET', setupRequest: pick(load.paths) }]
  } else {
    // Two runs side by side: the readers on most connections, the orderers on the rest.
    const orderers = Math.min(job.connections - 1, Math.max(1, load.orderers))
    options.connections = job.connections - orderers
    options.requests = [{ method: 'GET', setupRequest: pick(load.paths) }]
    ordering = {
      url: job.base + load.order.path, connections: orderers, duration: job.seconds, timeout: 10, method: 'POST',
      body: load.order.body, headers: { ...load.headers, 'content-type': 'application/json' }
    }
  }

  // The refusal row: answers with the expected status are not status errors (wrk's script does the same).
  const expected = load.kind === 'static' ? load.expectStatus : undefined
  let expectedSeen = 0
  const all = new Samples()
  const reads = new Samples()
  const orders = new Samples()
  const listen = (run: AutocannonRun, samples: Samples | null): AutocannonRun => run.on(
    'response',
    (_client, status, _bytes, ms) => {
      const us = ms * 1000
      if (status === expected) expectedSeen++
      all.add(us)
      if (samples === null) return
      samples.add(us)
      if (status < 200 || status > 299) samples.bad++
    }
  )
  const runs = [
    listen(autocannon(options), load.kind === 'mixed' ? reads : null),
    ...(ordering === null ? [] : [listen(autocannon(ordering), orders)])
  ]
  const results = await Promise.all(runs)
  const total = (f: (r: AutocannonResult) => number): number => results.reduce((n, r) => n + f(r), 0)
  const timeouts = total((r) => r.timeouts)
  process.stdout.write(formatResult({
    requests: total((r) => r.requests.total),
    durationUs: Math.max(...results.map((r) => r.duration)) * 1e6,
    errors: {
      connect: 0,
      read: Math.max(0, total((r) => r.errors) - timeouts),
      write: 0,
      status: total((r) => r.non2xx) - expectedSeen,
      timeout: timeouts
    },
    latencyUs: all.part().latencyUs,
    ...(load.kind === 'mixed' && { reads: reads.part(), orders: orders.part() })
  }))
}

await main()
