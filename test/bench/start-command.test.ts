// What `petstore serve`'s start command (the shebang of src/cli/main.ts, which the bench's server
// child reads) keeps out of the server's memory (docs/performance.md, "Memory"): a start with a
// warm compile cache never loads the type stripper (amaro: its source and its WebAssembly memory,
// about 18 MiB of RSS), and no start loads undici (Node's fetch, which an ES import of node:http
// pulls in through its WebSocket getters). Its flags also keep TurboFan's compile jobs on the
// main thread: concurrent jobs' zones raised glibc's main arena by about 14 MiB for good.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { test } from 'node:test'
import { promisify } from 'node:util'
import { startCommand, startServer } from '../../bench/processes.ts'
import { tempDir } from '../helpers/temp.ts'

const SERVER = new URL('../../src/server.ts', import.meta.url).pathname

/**
 * Imports the server's whole module graph in a process started as `petstore` starts, and lists
 * the internal modules it loaded.
 */
async function loadedModules (env: Record<string, string>): Promise<{ amaro: boolean; undici: boolean }> {
  const { flags } = startCommand()
  const script = `await import(${JSON.stringify(SERVER)}); const m = process.moduleLoadList; console.log(JSON.stringify({ amaro: m.some((x) => x.includes('deps/amaro')), undici: m.some((x) => x.includes('deps/undici')) }))`
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [...flags, '--input-type=module', '-e', script],
    { env: { ...process.env, ...env }, timeout: 60_000 }
  )
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as { amaro: boolean; undici: boolean }
}

test('the start command sets a compile cache: the first start strips the types, a second one loads no type stripper; neither loads undici', { timeout: 150_000 }, async (t) => {
  // Faults caught: NODE_COMPILE_CACHE dropped from the shebang (every start pays for amaro), and an
  // `import … from 'node:http'` in the server's modules (undici on every start).
  const { env } = startCommand()
  assert.match(env.NODE_COMPILE_CACHE ?? '', /\S/, 'the shebang sets NODE_COMPILE_CACHE')
  const cache = tempDir(t, 'petstore-compile-cache-')
  const first = await loadedModules({ ...env, NODE_COMPILE_CACHE: cache })
  assert.deepEqual(first, { amaro: true, undici: false }, 'a cold cache: the types are stripped once')
  const second = await loadedModules({ ...env, NODE_COMPILE_CACHE: cache })
  assert.deepEqual(second, { amaro: false, undici: false }, 'a warm cache: every module comes from it')
})

test('the bench reads the start command as env -S does: ${NAME} expands from the environment', () => {
  const { env, flags } = startCommand()
  assert.equal(env.MALLOC_ARENA_MAX, '2')
  assert.ok(!env.NODE_COMPILE_CACHE!.includes('${'), env.NODE_COMPILE_CACHE)
  assert.ok(env.NODE_COMPILE_CACHE!.startsWith(process.env.HOME ?? ''), env.NODE_COMPILE_CACHE)
  assert.deepEqual(flags, ['--max-semi-space-size=4', '--heap-growing-percent=20', '--no-concurrent-recompilation'])
})

test('the API server child is started with its settings in its process environment: UV_THREADPOOL_SIZE sizes its libuv pool', { timeout: 60_000 }, async (t) => {
  // Fault caught: --server-env reached only the server's config, so a variable Node or libc reads
  // (UV_THREADPOOL_SIZE, MALLOC_ARENA_MAX, NODE_OPTIONS) did nothing. The pool starts with the
  // server (its first file operation), so its size shows in the thread count.
  const dir = tempDir(t, 'petstore-bench-env-')
  const threads = async (pool: number): Promise<number> => {
    const server = await startServer(`pool ${pool}`, null, {
      petstore: {
        env: { DATABASE_URL: `sqlite:${dir}/pool-${pool}.db`, LOG_LEVEL: 'warn', UV_THREADPOOL_SIZE: String(pool) }
      }
    })
    try {
      return (await server.rss()).parts.threads
    } finally {
      await server.stop()
    }
  }
  const one = await threads(1)
  const five = await threads(5)
  assert.equal(five - one, 4, `threads with a pool of 1: ${one}, of 5: ${five}`)
})
