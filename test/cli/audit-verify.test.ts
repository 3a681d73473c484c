// `petstore audit verify` run as its own process (issue 48 finding 10; docs/operating.md, "The
// audit log"). Faults caught: a DATABASE_URL naming no database created as an empty file and
// reported "intact" (a mistyped path passing for a verified log); an "intact" line that does not
// say what the chain alone cannot show (a log wiped, its head rewritten to match), which only
// --known catches.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { tempDir } from '../helpers/temp.ts'

const CLI = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url))

/** The command as its own process: its exit code, stdout and stderr. */
function petstore (args: string[], env: Record<string, string>): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    const options = { env: { ...process.env, ...env }, timeout: 60_000 }
    execFile(process.execPath, [CLI, ...args], options, (error, out, err) => {
      resolve({ code: error === null ? 0 : Number((error as { code?: number }).code ?? 1), out, err })
    })
  })
}

test('audit verify on a path that holds no database exits 2 saying so, and creates no file', async (t) => {
  const path = join(tempDir(t, 'petstore-verify-'), 'typo.db')
  const missing = await petstore(['audit', 'verify'], { DATABASE_URL: `sqlite:${path}` })
  assert.equal(missing.code, 2, missing.out + missing.err)
  assert.equal(missing.out, '', 'no "intact" line')
  assert.match(missing.err, new RegExp(`no database at sqlite:${path}: nothing verified`))
  assert.equal(existsSync(path), false, 'the file was not created')

  const memory = await petstore(['audit', 'verify', '--json'], { DATABASE_URL: 'sqlite::memory:' })
  assert.equal(memory.code, 2, 'an in-memory database never holds the server\'s log')
  assert.equal(memory.out, '')
})

test('audit verify\'s intact line says what it cannot see without --known; a wiped log with its head reset passes the chain and fails --known', async (t) => {
  const path = join(tempDir(t, 'petstore-verify-'), 'petstore.db')
  const env = { DATABASE_URL: `sqlite:${path}` }
  for (const role of ['customer', 'staff']) {
    const made = await petstore(['keys', 'create', '--role', role, '--plan', 'free'], env)
    assert.equal(made.code, 0, made.err)
  }
  const intact = await petstore(['audit', 'verify'], env)
  assert.equal(intact.code, 0, intact.err)
  const line = /^audit log intact: 2 entries, last hash ([0-9a-f]{64}); (.*)\n$/.exec(intact.out)
  assert.ok(line !== null, intact.out)
  assert.equal(line[2], 'the chain alone cannot show a log cut at its end or wiped with its head rewritten to match: check a head kept elsewhere with --known COUNT:HASH')
  const kept = `2:${line[1]!}`
  const withKnown = await petstore(['audit', 'verify', '--known', kept], env)
  assert.equal(withKnown.code, 0, withKnown.err)
  assert.match(withKnown.out, /^audit log intact: 2 entries, last hash [0-9a-f]{64}; it holds the head kept \(entry 2\); a cut after that entry shows only against a later head\n$/)

  // Someone with write access to the database empties the log and resets its head: the chain
  // alone is whole (and the line says it cannot see this), the head kept is not in it.
  const db = new DatabaseSync(path)
  try { db.exec("DELETE FROM audit_log; UPDATE audit_head SET count = 0, hash = ''") } finally { db.close() }
  const wiped = await petstore(['audit', 'verify'], env)
  assert.equal(wiped.code, 0, wiped.err)
  assert.match(wiped.out, /^audit log intact: 0 entries, last hash \(none\); the chain alone cannot show a log cut at its end or wiped/)
  const caught = await petstore(['audit', 'verify', '--known', kept], env)
  assert.equal(caught.code, 1, caught.out)
  assert.match(caught.out, /^audit log broken at entry 1 \(removed\)/)
})
