// The rule local/no-effects-in-optional-call of eslint.config.js (issue 18): the arguments of a
// call that its chain can skip (`f?.(…)`, `obj?.m(…)`, `obj.m?.(…)`) may not do work, because
// when the chain stops they are never evaluated: `hooks.onKeyChanged?.(await keys.revokeKey(…))`
// revoked nothing from the CLI, which passes no hooks. Each snippet is linted in memory under a
// virtual file name, like test/lint/architecture.test.ts, with only this rule on.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ESLint } from 'eslint'

const ROOT = new URL('../../', import.meta.url).pathname
const RULE = 'local/no-effects-in-optional-call'
const MESSAGE = 'the arguments of an optional call are skipped when the chain stops (f?.(await g()) never runs g()): compute the value into a const first, then call'

const eslint = new ESLint({
  cwd: ROOT,
  overrideConfig: { files: ['**/*.ts'], languageOptions: { parserOptions: { projectService: false } } },
  ruleFilter: ({ ruleId }) => ruleId === RULE
})

/** The rule's reports for a snippet, as `line:column text-of-the-flagged-node`. */
async function reports (code: string, filePath = 'src/keys/keys.service.ts'): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: ROOT + filePath })
  assert.ok(result)
  return result.messages.map((message) => {
    assert.equal(message.ruleId, RULE, message.message)
    assert.equal(message.message, MESSAGE)
    const line = code.split('\n')[message.line - 1]!
    return `${message.line}:${message.column} ${line.slice(message.column - 1, (message.endColumn ?? message.column) - 1)}`
  })
}

const violations: Array<{ what: string; code: string; expected: string[]; file?: string }> = [
  {
    what: 'an await in an optional call (the issue 18 revoke)',
    code: 'export async function revoke (hooks: { onKeyChanged?: (k: unknown) => void }, keys: { revokeKey: (id: number) => Promise<unknown> }) {\n  hooks.onKeyChanged?.(await keys.revokeKey(1))\n}\n',
    expected: ['2:24 await keys.revokeKey(1)']
  },
  { what: 'a call as the argument of f?.()', code: 'declare const f: ((x: number) => void) | undefined\ndeclare function g (): number\nf?.(g())\n', expected: ['3:5 g()'] },
  { what: 'a method call in obj.m?.()', code: 'declare const obj: { m?: (x: number) => void }\ndeclare const x: { y: () => number }\nobj.m?.(x.y())\n', expected: ['3:9 x.y()'] },
  { what: 'a call in obj?.m(), whose chain stops at obj', code: 'declare const obj: { m: (x: number) => void } | undefined\ndeclare function g (): number\nobj?.m(g())\n', expected: ['3:8 g()'] },
  { what: 'a call in a?.b.c(), further down the chain', code: 'declare const a: { b: { c: (x: number) => void } } | undefined\ndeclare function g (): number\na?.b.c(g())\n', expected: ['3:8 g()'] },
  { what: 'a call nested in an object argument', code: 'declare const f: ((x: object) => void) | undefined\ndeclare function g (): number\nf?.({ at: [1, g()] })\n', expected: ['3:15 g()'] },
  { what: 'a new in the arguments', code: 'declare const f: ((x: object) => void) | undefined\nf?.(new Date())\n', expected: ['2:5 new Date()'] },
  { what: 'an assignment and an increment in the arguments', code: 'declare const f: ((...x: number[]) => void) | undefined\nlet n = 0\nlet m = 0\nf?.(n = 1, m++)\n', expected: ['4:5 n = 1', '4:12 m++'] },
  { what: 'the same in a client file', file: 'clients/typescript/src/index.ts', code: 'declare const f: ((x: number) => void) | undefined\ndeclare function g (): number\nf?.(g())\n', expected: ['3:5 g()'] }
]

for (const { what, code, expected, file } of violations) {
  test(`lint reports ${what}`, async () => {
    assert.deepEqual(await reports(code, file), expected)
  })
}

const allowed: Array<{ what: string; code: string }> = [
  { what: 'a value computed first, then passed', code: 'export async function revoke (hooks: { onKeyChanged?: (k: unknown) => void }, keys: { revokeKey: (id: number) => Promise<unknown> }) {\n  const revoked = await keys.revokeKey(1)\n  hooks.onKeyChanged?.(revoked)\n}\n' },
  { what: 'plain values, members and operators', code: 'declare const f: ((...x: unknown[]) => void) | undefined\ndeclare const s: { a: number; b?: { c: number } }\nf?.(s.a, s.b?.c, s.a + 1, `${s.a}`, [s.a], { a: s.a }, -s.a, typeof s)\n' },
  { what: 'a callback, whose body the optional call does not run', code: 'declare const f: ((cb: () => Promise<void>) => void) | undefined\ndeclare function g (): Promise<void>\nf?.(async () => { await g() })\nf?.(function () { return g() })\n' },
  { what: 'a call in the arguments of a call that cannot be skipped', code: 'declare const f: (x: number) => void\ndeclare const o: { a?: number }\ndeclare function g (): number\nf(g())\nf(o?.a ?? g())\n' },
  { what: 'a call on the result of a parenthesised chain (not skipped: it throws instead)', code: 'declare const a: { b: (x: number) => void } | undefined\ndeclare function g (): number\n;(a?.b)!(g())\n' }
]

for (const { what, code } of allowed) {
  test(`lint allows ${what}`, async () => {
    assert.deepEqual(await reports(code), [])
  })
}

test('the rule is on for every file of the project: src/, clients/, test/, bench/', async () => {
  const code = 'declare const f: ((x: number) => void) | undefined\ndeclare function g (): number\nf?.(g())\n'
  for (const file of ['src/server.ts', 'clients/typescript/src/index.ts', 'test/cli/cli.test.ts', 'bench/run.ts']) {
    assert.deepEqual(await reports(code, file), ['3:5 g()'], file)
  }
})
