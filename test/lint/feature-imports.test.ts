// The rule local/feature-imports of eslint.config.js (issue 47 item 5): a feature imports another
// feature only where FEATURE_IMPORTS allows it, each with its reason; any other import between
// features is reported, whichever way it is written (import, re-export, import()). Snippets are
// linted in memory under a virtual file name, like test/lint/architecture.test.ts. The list itself
// must say what is true: it names only features, and each import it allows is made in src/.
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { test } from 'node:test'
import { ESLint } from 'eslint'

const ROOT = new URL('../../', import.meta.url).pathname
const SRC = join(ROOT, 'src')
const RULE = 'local/feature-imports'
const { FEATURES, FEATURE_IMPORTS } = await import(join(ROOT, 'eslint.config.js')) as {
  FEATURES: string[]
  FEATURE_IMPORTS: Record<string, string[]>
}

const eslint = new ESLint({
  cwd: ROOT,
  overrideConfig: { files: ['**/*.ts'], languageOptions: { parserOptions: { projectService: false } } },
  ruleFilter: ({ ruleId }) => ruleId === RULE
})

async function problems (filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: ROOT + filePath })
  assert.ok(result)
  return result.messages.map((message) => `${message.ruleId ?? 'fatal'}: ${message.message}`)
}

const refused = (from: string, to: string): string =>
  `${RULE}: src/${from}/ may not import src/${to}/: a feature imports another only where FEATURE_IMPORTS in eslint.config.js allows it, with its reason (docs/architecture.md)`

const violations = [
  {
    what: 'a feature outside the list imports another (pets/ reads the orders port)',
    file: 'src/pets/pets.service.ts',
    code: "import type { OrderStore } from '../orders/orders.store.ts'\nexport type S = OrderStore\n",
    expected: [refused('pets', 'orders')]
  },
  {
    what: 'a listed feature imports one it is not allowed (audit/ reads the keys service)',
    file: 'src/audit/audit.service.ts',
    code: "import { createKeyAdmin } from '../keys/keys.service.ts'\nexport const k = createKeyAdmin\n",
    expected: [refused('audit', 'keys')]
  },
  {
    what: 'the allowed direction reversed (events/ imports webhooks/, which imports events/)',
    file: 'src/events/render.ts',
    code: "import { WebhookSchema } from '../webhooks/webhooks.schema.ts'\nexport const w = WebhookSchema\n",
    expected: [refused('events', 'webhooks')]
  },
  {
    what: 'a re-export and a dynamic import from another feature, in a nested file',
    file: 'src/orders/nested/helper.ts',
    code: "export { PetSchema } from '../../pets/pets.schema.ts'\nexport const m = import('../../keys/keys.view.ts')\n",
    expected: [refused('orders', 'pets'), refused('orders', 'keys')]
  }
]

for (const { what, file, code, expected } of violations) {
  test(`lint reports it when ${what} (${file})`, async () => {
    assert.deepEqual(await problems(file, code), expected)
  })
}

const allowed = [
  {
    what: 'the event catalogue imports a feature\'s schema, record and view',
    file: 'src/events/catalogue.ts',
    code: "import { PetSchema } from '../pets/pets.schema.ts'\nimport type { PetRecord } from '../pets/pets.store.ts'\nimport { toPublicPet } from '../pets/pets.view.ts'\nexport const p = [PetSchema, toPublicPet]\nexport type R = PetRecord\n"
  },
  {
    what: 'webhooks/ imports the events port and the catalogue',
    file: 'src/webhooks/dispatcher.ts',
    code: "import type { StoredEvent } from '../events/events.store.ts'\nexport { maySee } from '../events/catalogue.ts'\nexport type E = StoredEvent\n"
  },
  {
    what: 'a feature imports its own modules, the foundation and the pipeline\'s route helpers',
    file: 'src/orders/orders.routes.ts',
    code: "import { x } from './orders.schema.ts'\nimport { y } from '../shared/schemas.ts'\nimport { z } from '../routing/conditional.ts'\nimport type { Plan } from '../accounts/plans.ts'\nexport const a = [x, y, z]\nexport type P = Plan\n"
  },
  {
    what: 'a module outside the features imports several (app.ts composes them)',
    file: 'src/app.ts',
    code: "import { petsFeature } from './pets/pets.feature.ts'\nimport { ordersFeature } from './orders/orders.feature.ts'\nexport const f = [petsFeature, ordersFeature]\n"
  }
]

for (const { what, file, code } of allowed) {
  test(`lint allows it when ${what} (${file})`, async () => {
    assert.deepEqual(await problems(file, code), [])
  })
}

const SPECIFIER = /(?:^|[\s;])(?:import|export)\s[^'"`;]*?from\s*['"]([^'"]+)['"]|(?:^|[\s;(=])import\s*\(\s*['"]([^'"]+)['"]\s*\)/gm

function sourceFiles (dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.name.endsWith('.ts') ? [path] : []
  })
}

/** Every `from → to` pair of features that src/ imports, read from its import statements. */
function featureImportsInSrc (): Set<string> {
  const pairs = new Set<string>()
  for (const file of sourceFiles(SRC)) {
    const [from] = relative(SRC, file).split('/')
    if (from === undefined || !FEATURES.includes(from)) continue
    for (const match of readFileSync(file, 'utf8').matchAll(SPECIFIER)) {
      const specifier = match[1] ?? match[2]
      if (specifier === undefined || !specifier.startsWith('.')) continue
      const [to] = relative(SRC, resolve(dirname(file), specifier)).split('/')
      if (to !== undefined && to !== from && FEATURES.includes(to)) pairs.add(`${from} → ${to}`)
    }
  }
  return pairs
}

test('FEATURE_IMPORTS names only features, and each import it allows is one src/ makes', () => {
  const listed = Object.entries(FEATURE_IMPORTS).flatMap(([from, tos]) => tos.map((to) => `${from} → ${to}`))
  const notFeatures = listed.filter((pair) => pair.split(' → ').some((name) => !FEATURES.includes(name)))
  assert.deepEqual(notFeatures, [], 'an entry names a folder that is not a feature (eslint.config.js FEATURES)')
  const made = featureImportsInSrc()
  assert.deepEqual(listed.filter((pair) => !made.has(pair)), [], 'allowed but no longer made: take it off the list')
})
