// "Adding a resource" in docs/architecture.md, followed literally (issue 47 item 6), the way
// hono-open-api-starter proves its own: in a copy of the repository, the throwaway `widgets`
// resource is added one step of the recipe at a time (each file the recipe names gets its edit
// from test/architecture/recipe-widgets.ts, each command it names is run), then the copy is
// type-checked and linted, and its checks run: the widgets' own test through test/helpers/app.ts
// (every answer against the document) on SQLite and on PostgreSQL, the engines' schemas compared
// column for column, and the repository's tables of every operation, event type and tool. A step
// the recipe leaves out is an edit the copy misses, and one of them fails; a file it names that
// the widgets do not need has no edit here, and fails too. The recipe's count of files is its
// steps' count.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { cpSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { test } from 'node:test'
import { promisify } from 'node:util'
import { ESLint } from 'eslint'
import { tempDir } from '../helpers/temp.ts'
import { WIDGET_EDITS } from './recipe-widgets.ts'

const ROOT = new URL('../../', import.meta.url).pathname
const HEADING = '## Adding a resource'
const run = promisify(execFile)

/** What the copy holds: what the app, its tests, the document and the client's types are made from. */
const COPIED = [
  'src', 'test', 'scripts', 'docs/openapi.json', 'package.json', 'tsconfig.json', 'eslint.config.js',
  'clients/typescript/package.json', 'clients/typescript/scripts', 'clients/typescript/src'
]

/**
 * The repository's checks that list every operation, event type or tool, and the document's
 * (docs/openapi.json against the code, every tag in a group): run on SQLite with the widgets' test.
 */
const TABLES = [
  'test/access/scopes.http.test.ts',
  'test/events/catalogue.test.ts',
  'test/mcp/mcp-scopes.http.test.ts',
  'test/openapi/document.test.ts'
]
const WIDGETS_TEST = 'test/widgets/widgets.http.test.ts'

/** The rules that need no type information: the architecture's, and the lines' length. */
const LINT_RULES = new Set(['no-restricted-imports', 'no-restricted-properties'])

interface Step { number: number; names: string[] }

/** The recipe's intro and its numbered steps, each with the files (or commands) it names first. */
function recipe (): { intro: string; steps: Step[] } {
  const page = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8')
  const start = page.indexOf(`\n${HEADING}`)
  assert.ok(start >= 0, `docs/architecture.md has a "${HEADING}" section`)
  const section = page.slice(start + 1).split(/\n(?=## )/)[0]!
  const items = section.split(/\n(?=\d+\. )/)
  const steps = items.slice(1).map((item) => {
    const [, number, text] = /^(\d+)\. ([\s\S]*)$/.exec(item)!
    // The names a step starts with: `a`, `b` and `c`: what it does.
    const lead = /^((?:`[^`]+`(?:, | and )?)+):/.exec(text!.replace(/\s+/g, ' '))
    assert.ok(lead, `step ${number} starts with the files or the command it is about, then a colon`)
    return { number: Number(number), names: [...lead[1]!.matchAll(/`([^`]+)`/g)].map((match) => match[1]!) }
  })
  return { intro: items[0]!, steps }
}

const isCommand = (name: string): boolean => name.startsWith('npm ')

test('the recipe names each file once, and its count of files is the count of the files it names', () => {
  const { intro, steps } = recipe()
  assert.ok(steps.length >= 10, `the recipe's steps were read (${steps.length})`)
  assert.deepEqual(steps.map((step) => step.number), steps.map((_, i) => i + 1), 'steps are numbered 1, 2, 3 …')
  const files = steps.flatMap((step) => step.names).filter((name) => !isCommand(name))
  assert.equal(new Set(files).size, files.length, 'no file is named twice')
  const stated = /\b(\d+) files\b/.exec(intro.replace(/\s+/g, ' '))
  assert.ok(stated, 'the intro says how many files a new resource takes')
  assert.equal(Number(stated[1]), files.length, 'the intro\'s count is the steps\' count')
  const unknown = steps.flatMap((step) => step.names
    .filter((name) => WIDGET_EDITS[name] === undefined && !isCommand(name))
    .map((name) => `step ${step.number}: ${name}`))
  assert.deepEqual(unknown, [], 'every file the recipe names has its edit in test/architecture/recipe-widgets.ts')
})

/**
 * The environment of a program run in the copy: this process's, without node:test's mark of a
 * child (NODE_TEST_CONTEXT), under which `node --test` skips every file and exits 0.
 */
function copyEnv (extra: Record<string, string>): NodeJS.ProcessEnv {
  const { NODE_TEST_CONTEXT: _child, ...env } = process.env
  return { ...env, ...extra }
}

/** Runs a program in the copy and returns what it printed; its failure carries the end of that. */
async function inCopy (dir: string, file: string, args: string[], env: Record<string, string> = {}): Promise<string> {
  try {
    const { stdout } = await run(file, args, { cwd: dir, env: copyEnv(env), maxBuffer: 64 * 1024 * 1024 })
    return stdout
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string }
    const printed = `${stdout}\n${stderr}`.trim().split('\n')
    const failing = printed.filter((line) => /^\s*(✖|not ok|error|Error|.*error TS)/.test(line))
    const summary = [`${[file, ...args].join(' ')} failed:`, ...failing.slice(0, 30), ...printed.slice(-30)]
    throw new Error(summary.join('\n'), { cause: error })
  }
}

/**
 * Runs test files in the copy with node:test's spec reporter, and checks its summary: none failed,
 * and some passed (all skipped: only where `skippable`, a service missing outside CI).
 */
async function testsInCopy (
  dir: string,
  files: string[],
  options: { env?: Record<string, string>; pattern?: string; skippable?: boolean } = {}
): Promise<void> {
  const args = [
    '--import', './test/helpers/report-flush.ts', '--test', '--test-reporter=spec', '--test-concurrency=2',
    '--test-force-exit', ...(options.pattern === undefined ? [] : [`--test-name-pattern=${options.pattern}`]), ...files
  ]
  const printed = await inCopy(dir, process.execPath, args, options.env)
  const count = (name: string): number => Number(new RegExp(`^ℹ ${name} (\\d+)$`, 'm').exec(printed)?.[1] ?? NaN)
  const summary = `${files.join(' ')}: ${count('pass')} passed, ${count('fail')} failed, ${count('skipped')} skipped`
  assert.equal(count('fail'), 0, summary)
  assert.ok(count('pass') > 0 || (options.skippable === true && count('skipped') > 0), summary)
}

/** The problems of the architecture's lint rules in `files` of `root`, without their lines. */
async function lintProblems (root: string, files: string[]): Promise<Set<string>> {
  const eslint = new ESLint({
    cwd: root,
    overrideConfig: { files: ['**/*.ts'], languageOptions: { parserOptions: { projectService: false } } },
    ruleFilter: ({ ruleId }) => LINT_RULES.has(ruleId) || ruleId.startsWith('local/')
  })
  const results = await eslint.lintFiles(files.map((file) => join(root, file)))
  return new Set(results.flatMap((result) => result.messages.map((message) =>
    `${relative(root, result.filePath)}: ${message.ruleId ?? 'fatal'}: ${message.message}`)))
}

// About a minute of CPU (the copy's type check and five test files); the timeout leaves room for a
// loaded machine, where the whole suite runs beside it.
test('a throwaway resource added by following the recipe step by step type-checks, lints and passes the contract checks on both engines', { timeout: 10 * 60_000 }, async (t) => {
  const { steps } = recipe()
  const dir = tempDir(t, 'petstore-recipe-')
  for (const path of COPIED) cpSync(join(ROOT, path), join(dir, path), { recursive: true })
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'))

  // Every step, in order: its files edited, its commands run (they read the files before them).
  const touched: string[] = []
  for (const step of steps) {
    for (const name of step.names) {
      if (isCommand(name)) {
        const [program, ...args] = name.split(' ')
        await inCopy(dir, program!, args)
        continue
      }
      WIDGET_EDITS[name]!(dir)
      touched.push(name.replaceAll('<feature>', 'widgets'))
    }
  }

  // The document has the operations (what `npm run openapi` wrote).
  const doc = JSON.parse(readFileSync(join(dir, 'docs/openapi.json'), 'utf8')) as {
    paths: Record<string, Record<string, { operationId: string }>>
  }
  assert.equal(doc.paths['/widgets']?.post?.operationId, 'createWidget', 'the document has POST /widgets')
  assert.equal(doc.paths['/widgets/{widgetId}']?.get?.operationId, 'getWidget', 'the document has GET /widgets/{widgetId}')

  // The checks, side by side; each failure is reported, not only the first.
  writeFileSync(join(dir, 'tsconfig.recipe.json'), JSON.stringify({
    extends: './tsconfig.json', include: ['src', 'test/helpers', 'test/widgets']
  }))
  const sources = touched.filter((path) => path.startsWith('src/') && path.endsWith('.ts'))
  const checks: Record<string, Promise<void>> = {
    'type check': inCopy(dir, process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '--noEmit', '-p', 'tsconfig.recipe.json'])
      .then(() => {}),
    'lint (the architecture\'s rules, no new problem)': (async () => {
      const before = await lintProblems(ROOT, sources.filter((path) => !path.includes('widgets')))
      const added = [...await lintProblems(dir, sources)].filter((problem) => !before.has(problem))
      assert.deepEqual(added, [])
    })(),
    'tests on SQLite': testsInCopy(dir, [WIDGETS_TEST, ...TABLES], { env: { PETSTORE_TEST_ENGINE: 'sqlite' } }),
    'the widgets\' test on PostgreSQL': testsInCopy(dir, [WIDGETS_TEST], { env: { PETSTORE_TEST_ENGINE: 'postgres' }, skippable: true }),
    'the engines\' schemas column for column': testsInCopy(dir, ['test/storage/postgres/stores.test.ts'], {
      pattern: 'column for column', skippable: true
    })
  }
  const outcomes = await Promise.allSettled(Object.values(checks))
  const failures = Object.keys(checks).flatMap((name, i) => {
    const outcome = outcomes[i]!
    return outcome.status === 'rejected' ? [`${name}: ${(outcome.reason as Error).message}`] : []
  })
  assert.deepEqual(failures, [])
})
