// The layer rule of openapi/ and ops/ (eslint.config.js, TOP): app.ts composes them, server.ts
// and the CLI hand them their dependencies, and nothing else imports them. Snippets are linted in
// memory under a virtual file name, as test/lint/architecture.test.ts does.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ESLint } from 'eslint'

const ROOT = new URL('../../', import.meta.url).pathname
const eslint = new ESLint({
  cwd: ROOT,
  overrideConfig: { files: ['**/*.ts'], languageOptions: { parserOptions: { projectService: false } } },
  ruleFilter: ({ ruleId }) => ruleId === 'no-restricted-imports'
})

async function problems (filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: ROOT + filePath })
  assert.ok(result)
  return result.messages.map((message) => `${message.ruleId ?? 'fatal'}: ${message.message}`)
}

const TOP = 'openapi/ and ops/ are composed by app.ts (and handed their dependencies by server.ts and cli/): nothing else imports them (docs/architecture.md)'
const restricted = (path: string) => [`no-restricted-imports: '${path}' import is restricted from being used by a pattern. ${TOP}`]

const violations = [
  { rule: 'the request pipeline imports ops/', file: 'src/http/usage.ts', path: '../ops/metrics.ts' },
  { rule: 'the request pipeline imports openapi/', file: 'src/http/errors.ts', path: '../openapi/error-responses.ts' },
  { rule: 'a feature\'s routes import openapi/', file: 'src/pets/pets.routes.ts', path: '../openapi/openapi.ts' },
  { rule: 'the console imports openapi/', file: 'src/console/console.routes.ts', path: '../openapi/docs.ts' },
  { rule: 'a service imports ops/', file: 'src/orders/orders.service.ts', path: '../ops/metrics.ts' },
  { rule: 'shared/ imports ops/', file: 'src/shared/readiness.ts', path: '../ops/health.ts' },
  { rule: 'storage/ imports ops/', file: 'src/storage/sqlite/index.ts', path: '../../ops/metrics.ts' },
  { rule: 'infra.ts imports ops/', file: 'src/infra.ts', path: './ops/metrics.ts' }
]

for (const { rule, file, path } of violations) {
  test(`lint reports it when ${rule} (${file})`, async () => {
    assert.deepEqual(await problems(file, `import { x } from '${path}'\nexport const y = x\n`), restricted(path))
  })
}

const allowed = [
  { what: 'app.ts composes openapi/ and ops/', file: 'src/app.ts', code: "import { x } from './openapi/openapi.ts'\nimport { y } from './ops/metrics.ts'\nexport const z = [x, y]\n" },
  { what: 'server.ts makes the metrics', file: 'src/server.ts', code: "import { x } from './ops/metrics.ts'\nexport const y = x\n" },
  { what: 'a CLI command uses openapi/', file: 'src/cli/openapi.ts', code: "import { x } from '../openapi/openapi.ts'\nexport const y = x\n" },
  { what: 'openapi/ imports the pipeline\'s helpers and itself', file: 'src/openapi/serve.ts', code: "import { x } from '../transport/static.ts'\nimport { y } from './openapi.ts'\nexport const z = [x, y]\n" },
  { what: 'ops/ imports the pipeline\'s helpers', file: 'src/ops/metrics.ts', code: "import { x } from '../routing/route-config.ts'\nexport const y = x\n" }
]

for (const { what, file, code } of allowed) {
  test(`lint allows it when ${what} (${file})`, async () => {
    assert.deepEqual(await problems(file, code), [])
  })
}
