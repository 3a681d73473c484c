// The test runner's reports reach it whole (test/helpers/report-flush.ts, nodejs/node#64833): a
// runner started as package.json's test scripts start it (--test-force-exit, two files at a
// time) over eight files of 200 quick tests with long names counts every one of them, run after
// run. Without the preload the same runs lost tests at the end of files (here 10 to 34 of 1,600
// in each of five runs) and still exited 0, and the runner's own summary, written to a pipe, was
// cut off too; that is printed, not asserted (it is a race).
// Also: every `node --test` of package.json's scripts loads the preload.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { closeSync, openSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { tempDir } from '../helpers/temp.ts'

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
  let runs = 0
  const counted = async (preload: boolean): Promise<number> => {
    const args = [...(preload ? ['--import', join(ROOT, 'test/helpers/report-flush.ts')] : []), '--test', '--test-concurrency=2', '--test-force-exit', '--test-reporter=tap', '*.test.mjs']
    // The runner writes to a file, whose writes finish before its exit. The preload runs in each
    // file's process, not in the runner: a runner writing to a pipe cuts off its own last lines
    // at its forced exit (seen twice in CI: 1,586 and 1,587 of 1,600, the tail of the runner's
    // output, every file's reports had reached it), which is not the loss the preload cures.
    const out = join(dir, `run-${++runs}.tap`)
    const fd = openSync(out, 'w')
    try {
      const runner = spawn(process.execPath, args, { cwd: dir, env: runnerEnv, stdio: ['ignore', fd, 'ignore'] })
      const [code] = await once(runner, 'exit') as [number | null]
      assert.equal(code, 0)
    } finally {
      closeSync(fd)
    }
    // Each test's own report (`ok N - tI …`): a report lost from a file's process is what the
    // preload cures.
    return readFileSync(out, 'utf8').match(/^ok \d+ - t\d+ /gm)?.length ?? 0
  }
  for (let i = 0; i < 3; i++) assert.equal(await counted(true), FILES * TESTS)
  const without = await counted(false)
  t.diagnostic(`without the preload: ${without} of ${FILES * TESTS} reports counted`)
})
