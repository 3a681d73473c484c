// npm run bench's command line: what a run measures, and for how long.
import { parseArgs } from 'node:util'

export const USAGE = `usage: npm run bench -- [options]
  --rounds N          measured rounds per scenario, each beside a round of bare node:http (default 3)
  --slice S           seconds of load per round, whole seconds with wrk (default 5)
  --mixed-slice S     seconds per round of the mixed run (default 10: issue 20's three 10 s runs)
  --warmup S          seconds of unmeasured load before each scenario (default 2; 0 for none)
  --reference S       seconds of plain wrk (no script) against the bare server, at the start and
                      at the end, to check the bench's own reference against (default 10; 0 for
                      no check)
  --tolerance PCT     how far, in percent, the bench's reference may be from plain wrk's before
                      the run fails (default 15)
  --connections N     concurrent connections (default 50)
  --pets N            pets in the catalogue the reads pick from (default 10000)
  --only LIST         scenarios to run, comma-separated: get, id, list, rate_limit, orders, keyed
                      (orders with a new Idempotency-Key each), refused, log (the read with the
                      request log on vs REQUEST_LOG=off), mixed, webhooks (default all)
  --peers             on SQLite, the reads by id and the orders also by two peers in the same rounds
                      (json-server at its defaults, and bench/peers/afternoon.ts: node:sqlite, a key
                      lookup, X-RateLimit headers), with our ratio to each (default off)
  --drain S           after the webhooks scenario's load, how long to wait at most for every
                      order.created to reach the receiver (default 120)
  --server-env LIST   extra environment for the API servers, comma-separated NAME=VALUE pairs (for
                      example WEBHOOK_POLL_MS=10, or UV_THREADPOOL_SIZE=2: their process
                      environment too); printed with the results (default none)
  --instances N       instead of the usual setups: 1 instance against N behind nginx (deploy/nginx.conf;
                      a small node:http round-robin proxy when nginx is missing, said in the output),
                      on PostgreSQL + Redis, reads by id and orders (default 1: the usual setups)
  --generator NAME    wrk, autocannon, or auto (default): wrk when installed, else autocannon in a
                      child process, said in the output
  --log-level LEVEL   the servers' LOG_LEVEL (default info, the product default; logs go to /dev/null)
  --setups LIST       the stores to run on, comma-separated: sqlite, postgres (default both; each with
                      its Redis-limiter setup unless --redis off)
  --redis URL         Redis for the Redis-limiter runs, or "off" (default redis://127.0.0.1:6379)
  --postgres URL      PostgreSQL for the PostgreSQL runs, or "off" (default postgres://postgres@127.0.0.1:5432/test)
  --micro S           seconds per limiter micro-benchmark, 0 for none (default 1)
  --out DIR           where latest.json and latest.md go (default bench/results, ignored by git)
  --no-pin            do not pin the server and the generator to their own cores with taskset`

export const SCENARIO_IDS = ['get', 'id', 'list', 'rate_limit', 'orders', 'keyed', 'refused', 'log', 'mixed', 'webhooks'] as const
export type ScenarioId = typeof SCENARIO_IDS[number]

export const SETUP_STORES = ['sqlite', 'postgres'] as const
export type SetupStore = typeof SETUP_STORES[number]

export type GeneratorChoice = 'auto' | 'wrk' | 'autocannon'

export interface Options {
  rounds: number
  slice: number
  mixedSlice: number
  warmup: number
  /** Seconds of each plain-wrk reference run; 0: no check. */
  reference: number
  /** Percent. */
  tolerance: number
  connections: number
  pets: number
  /** Seconds to wait at most, after the webhooks scenario, for its deliveries. */
  drain: number
  /** Extra environment for the API servers (--server-env). */
  serverEnv: Record<string, string>
  /** 1: the usual setups; 2 or more: one instance against this many behind a proxy. */
  instances: number
  /** --peers: json-server and the afternoon app beside our SQLite reads by id and orders. */
  peers: boolean
  only: ReadonlySet<ScenarioId>
  /** --setups: the stores the usual setups run on (each with its Redis-limiter setup). */
  setups: ReadonlySet<SetupStore>
  generator: GeneratorChoice
  logLevel: string
  redisUrl: string | null
  postgresUrl: string | null
  microSeconds: number
  outDir: string | null
  pin: boolean
}

export class UsageError extends Error {}

/** The options, or null when --help asked for the usage text. Throws UsageError on a bad value. */
export function parseOptions (args: string[]): Options | null {
  const { values } = parseArgs({
    args,
    strict: true,
    options: {
      rounds: { type: 'string', default: '3' },
      slice: { type: 'string', default: '5' },
      'mixed-slice': { type: 'string', default: '10' },
      warmup: { type: 'string', default: '2' },
      reference: { type: 'string', default: '10' },
      tolerance: { type: 'string', default: '15' },
      connections: { type: 'string', default: '50' },
      pets: { type: 'string', default: '10000' },
      drain: { type: 'string', default: '120' },
      instances: { type: 'string', default: '1' },
      'server-env': { type: 'string', default: '' },
      only: { type: 'string', default: SCENARIO_IDS.join(',') },
      setups: { type: 'string', default: SETUP_STORES.join(',') },
      generator: { type: 'string', default: 'auto' },
      'log-level': { type: 'string', default: 'info' },
      redis: { type: 'string', default: 'redis://127.0.0.1:6379' },
      postgres: { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/test' },
      micro: { type: 'string', default: '1' },
      out: { type: 'string' },
      'no-pin': { type: 'boolean', default: false },
      peers: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false }
    }
  })
  if (values.help) return null
  const integer = (name: string, text: string, min: number, max: number): number => {
    const n = Number(text)
    if (!Number.isInteger(n) || n < min || n > max) throw new UsageError(`--${name} must be a whole number from ${min} to ${max}, got "${text}"`)
    return n
  }
  const only = new Set<ScenarioId>()
  for (const part of values.only.split(',').map((s) => s.trim()).filter((s) => s !== '')) {
    if (!(SCENARIO_IDS as readonly string[]).includes(part)) throw new UsageError(`--only: unknown scenario "${part}" (known: ${SCENARIO_IDS.join(', ')})`)
    only.add(part as ScenarioId)
  }
  if (only.size === 0) throw new UsageError('--only names no scenario')
  const setups = new Set<SetupStore>()
  for (const part of values.setups.split(',').map((s) => s.trim()).filter((s) => s !== '')) {
    if (!(SETUP_STORES as readonly string[]).includes(part)) throw new UsageError(`--setups: unknown store "${part}" (known: ${SETUP_STORES.join(', ')})`)
    setups.add(part as SetupStore)
  }
  if (setups.size === 0) throw new UsageError('--setups names no store')
  if (values.generator !== 'auto' && values.generator !== 'wrk' && values.generator !== 'autocannon') {
    throw new UsageError(`--generator must be wrk, autocannon or auto, got "${values.generator}"`)
  }
  const serverEnv: Record<string, string> = {}
  for (const pair of values['server-env'].split(',').map((s) => s.trim()).filter((s) => s !== '')) {
    const eq = pair.indexOf('=')
    if (eq < 1 || !/^[A-Z][A-Z0-9_]*$/.test(pair.slice(0, eq))) throw new UsageError(`--server-env takes NAME=VALUE pairs, got "${pair}"`)
    serverEnv[pair.slice(0, eq)] = pair.slice(eq + 1)
  }
  const micro = Number(values.micro)
  if (!Number.isFinite(micro) || micro < 0 || micro > 60) throw new UsageError(`--micro must be a number of seconds from 0 to 60, got "${values.micro}"`)
  return {
    rounds: integer('rounds', values.rounds, 1, 100),
    // wrk takes whole seconds only.
    slice: integer('slice', values.slice, 1, 600),
    mixedSlice: integer('mixed-slice', values['mixed-slice'], 1, 600),
    warmup: integer('warmup', values.warmup, 0, 60),
    reference: integer('reference', values.reference, 0, 600),
    tolerance: integer('tolerance', values.tolerance, 1, 1000),
    connections: integer('connections', values.connections, 1, 1000),
    pets: integer('pets', values.pets, 10, 1_000_000),
    drain: integer('drain', values.drain, 1, 3600),
    instances: integer('instances', values.instances, 1, 16),
    serverEnv,
    peers: values.peers,
    only,
    setups,
    generator: values.generator,
    logLevel: values['log-level'],
    redisUrl: values.redis === 'off' ? null : values.redis,
    postgresUrl: values.postgres === 'off' ? null : values.postgres,
    microSeconds: micro,
    outDir: values.out ?? null,
    pin: !values['no-pin']
  }
}
