// The command table of src/cli/main.ts: the usage text is made from it and names every command
// and subcommand, and each command's module is imported only when it runs.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { test } from 'node:test'
import { promisify } from 'node:util'
import { COMMANDS, USAGE, main } from '../../src/cli/main.ts'
import { KEY_SUBCOMMANDS, KEYS_USAGE } from '../../src/cli/keys.ts'
import { memoryIo } from '../helpers/io.ts'

const run = promisify(execFile)

test('petstore with no or an unknown command prints a usage that names every command of the table, and exits 2', async () => {
  for (const argv of [[], ['bogus'], ['toString'], ['__proto__']]) {
    const io = memoryIo({})
    assert.equal(await main(argv, io), 2, argv.join(' '))
    assert.equal(io.errors.join('\n'), USAGE)
  }
  for (const name of Object.keys(COMMANDS)) assert.match(USAGE, new RegExp(`^  ${name}\\b`, 'm'), name)
})

test('the usage names every subcommand of keys, and the table lists exactly those the keys module runs', async () => {
  assert.deepEqual(COMMANDS.keys!.subcommands, KEY_SUBCOMMANDS)
  for (const sub of KEY_SUBCOMMANDS) {
    assert.ok(USAGE.includes(sub), `petstore usage names keys ${sub}`)
    assert.match(KEYS_USAGE, new RegExp(`petstore keys ${sub}\\b`), `keys usage shows the arguments of ${sub}`)
  }
  const io = memoryIo({})
  assert.equal(await main(['keys'], io), 2)
  assert.equal(io.errors.join('\n'), KEYS_USAGE)
})

test('keys list loads no Fastify, pino or Scalar: each command is imported when it runs', async () => {
  // A child process records every module it resolves, then runs keys list on an in-memory database.
  const probe = `
    import { registerHooks } from 'node:module'
    const seen = new Set()
    registerHooks({ resolve (spec, ctx, next) { const r = next(spec, ctx); seen.add(r.url); return r } })
    const { main } = await import(${JSON.stringify(new URL('../../src/cli/main.ts', import.meta.url).href)})
    const lines = []
    const code = await main(['keys', 'list', '--json'], { env: { DATABASE_URL: 'sqlite::memory:' }, out: (l) => lines.push(l), err: (l) => lines.push(l) })
    console.log(JSON.stringify({ code, lines, modules: [...seen] }))`
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', probe])
  const result = JSON.parse(stdout) as { code: number; lines: string[]; modules: string[] }
  assert.equal(result.code, 0)
  assert.deepEqual(result.lines, [])
  const packages = result.modules.filter((u) => u.includes('/node_modules/'))
  for (const heavy of ['/fastify/', '/pino/', '/@scalar/', '/@fastify/', '/prom-client/']) {
    assert.ok(!packages.some((u) => u.includes(heavy)), `keys list loaded ${heavy}`)
  }
  assert.ok(!result.modules.some((u) => u.endsWith('/src/app.ts')), 'keys list loaded the app')
  assert.ok(result.modules.some((u) => u.endsWith('/src/cli/keys.ts')), 'the probe saw the keys command load')
})
