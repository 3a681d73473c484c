// The test runner's reports reach it whole (test/helpers/report-flush.ts, nodejs/node#64833): a
// runner started as package.json's test scripts start it (--test-force-exit, two files at a
// time) over eight files of 200 quick tests with long names counts every one of them, run after
// run. Without the preload the same runs lost tests at the end of files (here 10 to 34 of 1,600
// in each of five runs) and still exited 0, and the runner's own summary, written to a pipe, was
// cut off too; that is printed, not asserted (it is a race).
// Also: every `node --test` of package.json's scripts loads the preload.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { tempDir } from '../helpers/temp.ts'

const run = promisify(execFile)
const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const PRELOAD = '--import ./test/helpers/report-flush.ts'
const FILES = 8
const TESTS = 200

test('every node --test of package.json loads the report-flush preload', () => {
  const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts
  const runs = Object.values(scripts).flatMap((script) => script.split('&&')).filter((part) => /\bnode\b.*--test\b/.test(part))
  assert.ok(runs.length >= 4, `the test scripts' runs: ${runs.length}`)
  for (const part of runs) assert.ok(part.includes(`node ${PRELOAD} --test `), part.trim())
})

test('with the preload, a forced exit loses no test report', async (t) => {
  const dir = tempDir(t, 'petstore-report-flush-')
  for (let f = 0; f < FILES; f++) {
    writeFileSync(join(dir, `f${f}.test.mjs`), `import { test } from 'node:test'
const long = 'x'.repeat(2000)
for (let i = 0; i < ${TESTS}; i++) test('t' + i + ' ' + long, () => {})
`)
  }
  // A runner of its own: NODE_TEST_CONTEXT would make it report to this test's runner instead.
  const runnerEnv: NodeJS.ProcessEnv = { ...process.env, NODE_OPTIONS: '' }
  delete runnerEnv.NODE_TEST_CONTEXT
  const counted = async (preload: boolean): Promise<number> => {
    const args = [...(preload ? ['--import', join(ROOT, 'test/helpers/report-flush.ts')] : []), '--test', '--test-concurrency=2', '--test-force-exit', '--test-reporter=tap', '*.test.mjs']
    const { stdout } = await run(process.execPath, args, { cwd: dir, maxBuffer: 64 * 1024 * 1024, env: runnerEnv })
    // Each test's own report (`ok N - tI …`), not the runner's summary: the runner's own last
    // lines race its forced exit (seen once in CI with the preload too), and a report lost from a
    // file's process is what the preload cures.
    return stdout.match(/^ok \d+ - t\d+ /gm)?.length ?? 0
  }
  for (let i = 0; i < 3; i++) assert.equal(await counted(true), FILES * TESTS)
  const without = await counted(false)
  t.diagnostic(`without the preload: ${without} of ${FILES * TESTS} reports counted`)
})
