// The CLI stores only what the API would (issue 30 item 6): `keys create` checks its values with
// the API's own schema (an empty name, a 5,000-character one and an escape sequence were stored),
// and every name it prints has its control characters escaped, including one stored before the
// rule (`keys list` set the operator's terminal title). Asserted on the rows and on the bytes a
// real process writes to stdout. Faults caught: a refused value stored anyway or exiting 0; the
// CLI's own list of roles or plans drifting from the API's; a name printed raw, in the table or
// in --json (where JSON.stringify leaves DEL, C1 and bidirectional controls as they are).
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { test } from 'node:test'
import { promisify } from 'node:util'
import { main } from '../../src/cli/main.ts'
import { createSqliteStores } from '../../src/storage/sqlite/index.ts'
import { memoryIo } from '../helpers/io.ts'
import { tempDir } from '../helpers/temp.ts'

const run = promisify(execFile)
const CLI = new URL('../../src/cli/main.ts', import.meta.url).pathname

async function storedNames (path: string): Promise<(string | null)[]> {
  const stores = createSqliteStores(path)
  try {
    return (await stores.keys.listKeys({ limit: 100, afterId: 0 })).map((k) => k.name)
  } finally {
    await stores.close()
  }
}

test('keys create refuses what the API refuses, with one line and exit 2, and stores nothing', async (t) => {
  const dir = tempDir(t, 'petstore-cli-')
  const path = join(dir, 'p.db')
  const env = { DATABASE_URL: `sqlite:${path}` }
  const free = ['keys', 'create', '--role', 'customer', '--plan', 'free']
  const cases: [string[], string][] = [
    [[...free, '--name', ''], '--name must NOT have fewer than 1 characters'],
    [[...free, '--name', 'x'.repeat(5000)], '--name must NOT have more than 100 characters'],
    [[...free, '--name', 'a\u001b]0;pwned\u0007b'], '--name must not contain control characters (U+0000 to U+001F, U+007F to U+009F)'],
    [[...free, '--name', 'del\u007f'], '--name must not contain control characters (U+0000 to U+001F, U+007F to U+009F)'],
    [[...free, '--name', 'csi\u009b31m'], '--name must not contain control characters (U+0000 to U+001F, U+007F to U+009F)'],
    [['keys', 'create', '--role', 'owner', '--plan', 'free'], '--role must be one of customer, staff, admin'],
    [['keys', 'create', '--role', 'customer', '--plan', 'gold'], '--plan must be one of free, pro, business, enterprise'],
    [['keys', 'create', '--plan', 'free'], '--role is required'],
    [[...free, '--per-minute', '5', '--per-day', '50'], '--per-minute is not accepted with --plan free'],
    [['keys', 'create', '--role', 'customer', '--plan', 'enterprise', '--per-minute', '5'], '--per-day is required with --plan enterprise'],
    [['keys', 'create', '--role', 'customer', '--plan', 'enterprise', '--per-minute', '5', '--per-day', '2000000000'], '--per-day must be <= 1000000000'],
    [[...free, '--expires-at', 'tomorrow'], '--expires-at must match format "date-time"'],
    [[...free, '--expires-in', '999999999d'], '--expires-in 999999999d ends after the last date a date-time can hold']
  ]
  for (const [argv, message] of cases) {
    const io = memoryIo(env)
    assert.equal(await main(argv, io), 2, argv.join(' '))
    assert.deepEqual(io.errors, [message], argv.join(' '))
    assert.deepEqual(io.lines, [])
  }
  assert.deepEqual(await storedNames(path), [], 'a refused create stored a key')
  // What the API accepts is stored as given: 100 characters, other scripts, inner spaces.
  const good = 'Ünïcode 猫 😀 ' + 'x'.repeat(88)
  assert.equal([...good].length, 100)
  assert.equal(await main([...free, '--name', good], memoryIo(env)), 0)
  assert.deepEqual(await storedNames(path), [good])
})

test('keys list prints a name stored before the rule with its control characters escaped: no ESC, BEL, C1 or bidi byte reaches stdout', async (t) => {
  const dir = tempDir(t, 'petstore-cli-')
  const path = join(dir, 'p.db')
  const env = { DATABASE_URL: `sqlite:${path}` }
  // Written straight through the store, as an older version (or a hand edit) would have.
  const evil = 'shop\u001b]0;pwned\u0007\u001b[2J\u009b31m\u007f\u202eevil\nnext'
  const stores = createSqliteStores(path)
  try {
    await stores.keys.createKey({
      name: evil,
      role: 'customer',
      plan: 'free',
      perMinute: null,
      perDay: null,
      hash: 'h'.repeat(64),
      prefix: 'psk_AAAAAAAA',
      now: Date.now()
    })
  } finally {
    await stores.close()
  }
  const escaped = 'shop\\u001b]0;pwned\\u0007\\u001b[2J\\u009b31m\\u007f\\u202eevil\\u000anext'
  const table = await run(process.execPath, [CLI, 'keys', 'list'], { env: { ...process.env, ...env }, encoding: 'buffer' })
  const json = await run(process.execPath, [CLI, 'keys', 'list', '--json'], { env: { ...process.env, ...env }, encoding: 'buffer' })
  for (const [what, stdout] of [['table', table.stdout], ['--json', json.stdout]] as const) {
    for (const byte of [0x1b, 0x07, 0x7f]) assert.ok(!stdout.includes(byte), `${what}: byte 0x${byte.toString(16)} on stdout`)
    for (const char of ['\u009b', '\u202e']) assert.ok(!stdout.includes(Buffer.from(char)), `${what}: ${JSON.stringify(char)} on stdout`)
  }
  const line = table.stdout.toString('utf8').trimEnd()
  assert.ok(!line.includes('\n'), 'the name\'s line feed broke the table\'s line')
  assert.ok(line.endsWith(`  ${escaped}`), line)
  // The JSON is still the stored name, once parsed.
  assert.equal(JSON.parse(json.stdout.toString('utf8')).name, evil)
})
