// node bench/limiter-cpu.ts: what the Redis limiter costs this process in CPU per decision, over
// the in-process one (issue 34 item 3b). N loops each call consume() on a subject of their own,
// back to back, against the real Redis; CPU is process.cpuUsage() (user + system, every thread of
// this process) over the calls made. The limiters take turns in short rounds, so that a busy
// machine (other processes on the same cores) weighs on all of them alike, and each figure is
// the median of its rounds:
//   memory    the in-process limiter, as `petstore serve` runs without Redis
//   redis     the Redis limiter alone
//   served    the Redis limiter as it is served: under the fallback, which also peeks at the
//             in-process one for bans; "served - memory" is what Redis costs a request
// --baseline PATH adds the same two rows for another version of src/ratelimit/redis.ts, measured
// in the same rounds (a copy next to the original, so that its imports resolve):
//   git show REV:src/ratelimit/redis.ts > src/ratelimit/redis-baseline.ts
//   node bench/limiter-cpu.ts --baseline src/ratelimit/redis-baseline.ts
// Commands are those this client sent (its sendCommand), so other users of the Redis do not count.
//
// --subjects N makes the loops share N subjects (1: the bench's one key, whose calls then fill
// each batch) instead of one each.
//
//   node bench/limiter-cpu.ts [--redis URL] [--in-flight 1,10,50] [--subjects N] [--calls 5000]
//     [--rounds 9] [--repeats 3] [--baseline PATH]
import { randomBytes } from 'node:crypto'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { Redis, type Command } from 'ioredis'
import { createFallbackRateLimiter } from '../src/ratelimit/fallback.ts'
import type { Quota, RateLimiter } from '../src/ratelimit/limiter.ts'
import { createMemoryRateLimiter } from '../src/ratelimit/memory.ts'
import { createRedisRateLimiter, redisClientOptions } from '../src/ratelimit/redis.ts'
import { deleteRedisKeys } from '../scripts/services.ts'

const HUGE_QUOTA: Quota = { perMinute: 1_000_000_000, perDay: 1_000_000_000 }

const { values } = parseArgs({
  options: {
    redis: { type: 'string', default: 'redis://127.0.0.1:6379' },
    'in-flight': { type: 'string', default: '1,10,50' },
    calls: { type: 'string', default: '5000' },
    rounds: { type: 'string', default: '9' },
    repeats: { type: 'string', default: '3' },
    baseline: { type: 'string' },
    subjects: { type: 'string' }
  },
  strict: true
})
const levels = values['in-flight'].split(',').map(Number)
const calls = Number(values.calls)
const rounds = Number(values.rounds)
const repeats = Number(values.repeats)
// How many subjects the loops share out (a loop's is its number modulo this): by default one each;
// 1 is the bench's case, every request on one key, so that a batch holds one subject's calls.
const subjectCount = values.subjects === undefined ? Infinity : Number(values.subjects)
type CreateRedisRateLimiter = typeof createRedisRateLimiter
const baseline = values.baseline === undefined
  ? null
  : (await import(pathToFileURL(path.resolve(values.baseline)).href) as {
      createRedisRateLimiter: CreateRedisRateLimiter
    }).createRedisRateLimiter

interface Sample { cpuUs: number; wallUs: number; commands: number; redisUs: number }

/** Redis's own time in script calls so far (µs, `INFO commandstats`: EVALSHA and EVAL, every client). */
async function redisScriptUs (): Promise<number> {
  const text = await redis.info('commandstats')
  let total = 0
  for (const m of text.matchAll(/^cmdstat_(?:evalsha|eval):calls=\d+,usec=(\d+),/gm)) total += Number(m[1])
  return total
}

const counter = { commands: 0 }

async function measure (limiter: RateLimiter, subjects: string[]): Promise<Sample> {
  const perLoop = Math.ceil(calls / subjects.length)
  const redisBefore = await redisScriptUs()
  const commandsBefore = counter.commands
  const cpu = process.cpuUsage()
  const start = process.hrtime.bigint()
  let refused = 0
  await Promise.all(subjects.map(async (s) => {
    for (let i = 0; i < perLoop; i++) if (!(await limiter.consume(s, HUGE_QUOTA)).allowed) refused++
  }))
  const wallNs = Number(process.hrtime.bigint() - start)
  const used = process.cpuUsage(cpu)
  if (refused > 0) throw new Error(`${refused} calls were refused`)
  const made = perLoop * subjects.length
  const commands = (counter.commands - commandsBefore) / made
  const redisUs = (await redisScriptUs() - redisBefore) / made
  return { cpuUs: (used.user + used.system) / made, wallUs: wallNs / 1000 / made, commands, redisUs }
}

function median (xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? NaN
}

const redis = new Redis(values.redis, { ...redisClientOptions(), lazyConnect: true })
redis.on('error', () => {})
await redis.connect()
const send = redis.sendCommand.bind(redis)
redis.sendCommand = (command: Command, ...rest: unknown[]) => {
  counter.commands++
  return send(command, ...(rest as [never]))
}
const prefix = `petstore:bench:${randomBytes(6).toString('hex')}:`
const fmt = (n: number): string => n.toFixed(1).padStart(6)

try {
  process.stdout.write(`node ${process.version}; CPU µs per consume() (process user + system), median of ${rounds} rounds of ${calls} calls; wall µs per call, client commands per call and Redis's µs per call in its scripts (INFO commandstats) in brackets\n`)
  for (let r = 1; r <= repeats; r++) {
    for (const inFlight of levels) {
      const subjects = Array.from({ length: inFlight }, (_, i) => `key:bench-${i % subjectCount}`)
      const served = (create: CreateRedisRateLimiter): RateLimiter =>
        createFallbackRateLimiter({ primary: create({ redis, prefix }), fallback: createMemoryRateLimiter() })
      const limiters: [string, RateLimiter][] = [
        ['memory', createMemoryRateLimiter()],
        ['redis', createRedisRateLimiter({ redis, prefix })],
        ['served', served(createRedisRateLimiter)]
      ]
      if (baseline !== null) limiters.push(['baseline redis', baseline({ redis, prefix })], ['baseline served', served(baseline)])
      const samples = new Map<string, Sample[]>(limiters.map(([name]) => [name, []]))
      // Warm-up: the connection, the script's load, the JIT.
      for (const [, limiter] of limiters) await measure(limiter, subjects)
      for (let i = 0; i < rounds; i++) {
        for (const [name, limiter] of limiters) samples.get(name)!.push(await measure(limiter, subjects))
      }
      const cpu = new Map([...samples].map(([name, s]) => [name, median(s.map((x) => x.cpuUs))]))
      const parts = [...samples].map(([name, s]) => name === 'memory'
        ? `memory ${fmt(cpu.get(name)!)}`
        : `${name} ${fmt(cpu.get(name)!)} (${median(s.map((x) => x.wallUs)).toFixed(1)}, `
          + `${median(s.map((x) => x.commands)).toFixed(3)}, Redis ${median(s.map((x) => x.redisUs)).toFixed(1)})`)
      const over = (name: string): string => fmt(cpu.get(name)! - cpu.get('memory')!)
      process.stdout.write(`repeat ${r}, ${String(inFlight).padStart(2)} in flight: ${parts.join(' | ')} | served - memory ${over('served')}${baseline === null ? '' : `, baseline ${over('baseline served')}`}\n`)
      for (const [, limiter] of limiters) await limiter.close()
    }
  }
} finally {
  await deleteRedisKeys(redis, prefix)
  redis.disconnect()
}
