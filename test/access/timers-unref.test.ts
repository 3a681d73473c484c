// The timers of the lift poll and the usage flush (src/access/ban-sync.ts, usage.ts) never keep a
// process alive: a program that starts them and forgets to stop them still exits by itself (the
// server stops them on close; a script, a CLI command or a test may not). Each case runs in a
// child process, which must end on its own well before the bound. Written against the survivors
// of `npm run mutate -- access` (docs/testing.md).
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { test } from 'node:test'

const ROOT = new URL('../../', import.meta.url)

for (const [name, start] of [
  ['the lift poll', 'const { createBanSync } = await import("./src/access/ban-sync.ts"); createBanSync(stores.keys, limiter).start()'],
  ['the usage flush', 'const { createUsageRecorder } = await import("./src/access/usage.ts"); createUsageRecorder(stores.keys).start()']
] as const) {
  test(`a process that starts ${name} and never stops it exits by itself`, () => {
    const script = [
      'const { createSqliteStores } = await import("./src/storage/sqlite/index.ts")',
      'const { createMemoryRateLimiter } = await import("./src/ratelimit/memory.ts")',
      'const stores = createSqliteStores(":memory:")',
      'const limiter = createMemoryRateLimiter({ now: Date.now })',
      start,
      'console.log("started")'
    ].join('\n')
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8', timeout: 15_000 })
    assert.equal(child.stderr, '')
    assert.equal(child.stdout, 'started\n')
    assert.equal(child.signal, null, 'killed at the bound: the timer kept the process alive')
    assert.equal(child.status, 0)
  })
}
