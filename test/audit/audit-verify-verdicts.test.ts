// `petstore audit verify` run in process (src/cli/audit.ts, through main as the command line
// runs it), on a SQLite file: each verdict's exit code and the exact line an operator reads,
// with and without --known and --json, and each input refused before anything is opened. The
// same command as its own process: test/cli/audit-verify.test.ts and audit-verify.http.test.ts.
import assert from 'node:assert/strict'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { userInfo } from 'node:os'
import { DatabaseSync } from 'node:sqlite'
import { test, type TestContext } from 'node:test'
import { AUDIT_USAGE } from '../../src/cli/audit.ts'
import { main } from '../../src/cli/main.ts'
import { memoryIo } from '../helpers/io.ts'
import { tempDir } from '../helpers/temp.ts'

const UNSEEN = 'the chain alone cannot show a log cut at its end or wiped with its head rewritten to match: check a head kept elsewhere with --known COUNT:HASH'

async function petstore (args: string[], env: Record<string, string>) {
  const io = memoryIo(env)
  const code = await main(args, io)
  return { code, lines: io.lines, errors: io.errors }
}

/** A database file whose log holds two entries (two keys created with the CLI), and its head. */
async function logOfTwo (t: TestContext): Promise<{ env: Record<string, string>; path: string; hash: string }> {
  const path = join(tempDir(t, 'petstore-verdicts-'), 'petstore.db')
  const env = { DATABASE_URL: `sqlite:${path}` }
  for (const role of ['customer', 'staff']) {
    const made = await petstore(['keys', 'create', '--role', role, '--plan', 'free'], env)
    assert.equal(made.code, 0, made.errors.join('\n'))
  }
  const db = new DatabaseSync(path)
  try {
    const head = db.prepare('SELECT count, hash FROM audit_head').get() as { count: number; hash: string }
    assert.equal(head.count, 2)
    // A command run from a shell is recorded as the user who ran it.
    const actors = db.prepare('SELECT actor_type, actor_user FROM audit_log ORDER BY id').all()
    const user = userInfo().username
    const cli = { actor_type: 'cli', actor_user: user }
    assert.deepEqual(actors.map((row) => ({ ...row })), [cli, cli])
    return { env, path, hash: head.hash }
  } finally {
    db.close()
  }
}

test('audit verify on an intact log exits 0 with one line: the count, the last hash, and what it cannot see without --known', async (t) => {
  const { env, hash } = await logOfTwo(t)
  assert.deepEqual(await petstore(['audit', 'verify'], env), {
    code: 0, lines: [`audit log intact: 2 entries, last hash ${hash}; ${UNSEEN}`], errors: []
  })
  assert.deepEqual(await petstore(['audit', 'verify', '--known', `2:${hash}`], env), {
    code: 0,
    lines: [`audit log intact: 2 entries, last hash ${hash}; it holds the head kept (entry 2); a cut after that entry shows only against a later head`],
    errors: []
  })
  // A head kept later than this log: its count has two digits.
  assert.deepEqual(await petstore(['audit', 'verify', '--known', `12:${hash}`], env), {
    code: 1, lines: ['audit log broken at entry 3 (removed): entry 3 was removed: the head kept counts 12, the log 2'], errors: []
  })
  const json = await petstore(['audit', 'verify', '--json'], env)
  assert.equal(json.code, 0)
  assert.deepEqual(json.lines.map((line) => JSON.parse(line)), [{ ok: true, count: 2, hash, checked: 2 }])
})

test('audit verify exits 1 naming the first fault, in words and in JSON: a head kept that the log no longer holds, an entry changed', async (t) => {
  const { env, path, hash } = await logOfTwo(t)
  const other = 'e'.repeat(64)
  assert.deepEqual(await petstore(['audit', 'verify', '--known', `2:${other}`], env), {
    code: 1,
    lines: ['audit log broken at entry 2 (changed): entry 2 is not the one recorded: its hash differs from the head kept'],
    errors: []
  })
  const db = new DatabaseSync(path)
  try { db.exec("UPDATE audit_log SET target_id = '999' WHERE id = 1") } finally { db.close() }
  const json = await petstore(['audit', 'verify', '--json'], env)
  assert.equal(json.code, 1)
  assert.deepEqual(json.lines.map((line) => JSON.parse(line)), [{
    ok: false,
    count: 2,
    hash,
    checked: 0,
    fault: { entry: 1, problem: 'changed', message: 'entry 1 was changed (or inserted in its place): its hash does not follow from entry 0 and its content' }
  }])
})

test('an empty log is intact with no last hash; a head kept of 0 entries is accepted', async (t) => {
  const path = join(tempDir(t, 'petstore-verdicts-'), 'empty.db')
  writeFileSync(path, '')
  const env = { DATABASE_URL: `sqlite:${path}` }
  assert.deepEqual(await petstore(['audit', 'verify'], env), {
    code: 0, lines: [`audit log intact: 0 entries, last hash (none); ${UNSEEN}`], errors: []
  })
  assert.equal((await petstore(['audit', 'verify', '--known', '0:'], env)).code, 0)
})

test('audit verify refuses, with exit 2 and before opening anything, another subcommand, a malformed --known and a database that is not there', async (t) => {
  const path = join(tempDir(t, 'petstore-verdicts-'), 'typo.db')
  const env = { DATABASE_URL: `sqlite:${path}` }
  for (const args of [['audit'], ['audit', 'list'], ['audit', 'VERIFY']]) {
    assert.deepEqual(await petstore(args, env), { code: 2, lines: [], errors: AUDIT_USAGE.split('\n') }, args.join(' '))
  }
  assert.match(AUDIT_USAGE, /^usage:\n {2}petstore audit verify \[--known COUNT:HASH\] \[--json\]\n/)
  const hex = 'a'.repeat(64)
  const malformed = [
    '', '2', `x:${hex}`, `02:${hex}`, `2:${hex.slice(1)}`, `2:${hex.toUpperCase()}`, `2:${hex}a`, ` 2:${hex}`,
    // 17 digits: past what a count can be and still be exact in a double.
    `1${'0'.repeat(16)}:`
  ]
  for (const known of malformed) {
    assert.deepEqual(await petstore(['audit', 'verify', '--known', known], env), {
      code: 2, lines: [], errors: ['--known takes COUNT:HASH, as GET /v1/admin/audit/head answers them']
    }, known)
  }
  assert.deepEqual(await petstore(['audit', 'verify'], env), {
    code: 2,
    lines: [],
    errors: [`petstore audit verify: no database at sqlite:${path}: nothing verified (DATABASE_URL must name the server's database)`]
  })
  assert.equal(existsSync(path), false, 'no file was created')
  const memory = await petstore(['audit', 'verify'], { DATABASE_URL: 'sqlite::memory:' })
  assert.equal(memory.code, 2)
  assert.match(memory.errors.join('\n'), /^petstore audit verify: no database at .*: nothing verified/)
})
