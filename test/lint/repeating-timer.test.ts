// The rule local/no-repeating-timer of eslint.config.js (issue 29): background work has one home,
// src/jobs/, so a repeating timer anywhere else in src/ is reported, whichever way it is reached;
// a one-shot setTimeout (a deadline, a retry) is not. Snippets are linted in memory under a virtual
// file name, like test/lint/architecture.test.ts. The exceptions are disable comments, one line
// each, and the list of them is pinned here: a new one is a decision, made in this file.
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { ESLint } from 'eslint'

const ROOT = new URL('../../', import.meta.url).pathname
const RULE = 'local/no-repeating-timer'
const MESSAGE = 'a repeating timer is background work: declare a job in src/jobs/jobs.ts (docs/architecture.md "Background jobs"); a one-shot setTimeout for a deadline is fine'

const eslint = new ESLint({
  cwd: ROOT,
  overrideConfig: { files: ['**/*.ts'], languageOptions: { parserOptions: { projectService: false } } },
  ruleFilter: ({ ruleId }) => ruleId === RULE
})

/** The rule's reports for a snippet, as `line:column`. */
async function reports (code: string, filePath: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: ROOT + filePath })
  assert.ok(result)
  return result.messages.map((message) => {
    assert.equal(message.ruleId, RULE, message.message)
    assert.equal(message.message, MESSAGE)
    return `${message.line}:${message.column}`
  })
}

const violations = [
  { what: 'the global setInterval in a route module (the order sweep of before)', file: 'src/orders/orders.routes.ts', code: 'declare function sweep (): void\nexport const timer = setInterval(sweep, 10_000)\n', expected: ['2:22'] },
  { what: 'globalThis.setInterval in a service', file: 'src/access/usage.ts', code: 'export const timer = globalThis.setInterval(() => {}, 2000)\n', expected: ['1:33'] },
  { what: 'setInterval from node:timers in server.ts', file: 'src/server.ts', code: 'import { setInterval as every } from \'node:timers\'\nexport const timer = every(() => {}, 2000)\n', expected: ['1:10'] },
  { what: 'the async iterator of node:timers/promises in the infrastructure', file: 'src/infra.ts', code: 'import * as timers from \'node:timers/promises\'\nexport async function poll () { for await (const _ of timers.setInterval(2000)) break }\n', expected: ['2:62'] },
  { what: 'setInterval named in a string', file: 'src/storage/postgres/index.ts', code: 'import * as timers from \'node:timers\'\nexport const timer = timers[\'setInterval\'](() => {}, 2000)\n', expected: ['2:29'] }
]

for (const { what, file, code, expected } of violations) {
  test(`lint reports ${what} (${file})`, async () => {
    assert.deepEqual(await reports(code, file), expected)
  })
}

test('lint allows a one-shot setTimeout (a deadline) anywhere in src/, and setInterval in src/jobs/', async () => {
  assert.deepEqual(await reports('export function deadline (ms: number, onLate: () => void): () => void {\n  const timer = setTimeout(onLate, ms)\n  return () => { clearTimeout(timer) }\n}\n', 'src/transport/connections.ts'), [])
  assert.deepEqual(await reports('export const timer = setInterval(() => {}, 1000)\n', 'src/jobs/runner.ts'), [])
  assert.deepEqual(await reports('export const timer = setInterval(() => {}, 1000)\n', 'src/jobs/retention.ts'), [], 'a new job module')
})

/** Every .ts file under src/, relative to the repository. */
function sources (dir = 'src'): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`
    if (entry.isDirectory()) return sources(path)
    return entry.name.endsWith('.ts') ? [path] : []
  })
}

test('the exceptions are exactly the two decided ones, each one line with its reason', () => {
  // The drain's idle-connection sweep lives only during a stop; the SQLite WAL checkpoint stands
  // in for the engine's own checkpoint and lives as long as its connection (docs/architecture.md
  // "Background jobs").
  const found: string[] = []
  for (const file of sources()) {
    const lines = readFileSync(join(ROOT, file), 'utf8').split('\n')
    lines.forEach((line, i) => {
      if (!line.includes('eslint-disable') || !line.includes(RULE)) return
      assert.match(line, new RegExp(`^\\s*// eslint-disable-next-line ${RULE} -- \\S`), `${file}:${i + 1}: one line, with its reason`)
      assert.match(lines[i + 1] ?? '', /setInterval\(/, `${file}:${i + 1}: the next line starts the timer`)
      found.push(file)
    })
  }
  assert.deepEqual(found.sort(), ['src/server.ts', 'src/storage/sqlite/checkpoint.ts'])
})

test('without its disable comment, each exception is reported: the rule sees the real files', async () => {
  for (const file of ['src/server.ts', 'src/storage/sqlite/checkpoint.ts']) {
    const code = readFileSync(join(ROOT, file), 'utf8').replace(new RegExp(`// eslint-disable-next-line ${RULE}.*`), '')
    assert.equal((await reports(code, file)).length, 1, file)
  }
})
