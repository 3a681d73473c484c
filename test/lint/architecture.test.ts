// The architecture rules of eslint.config.js report a deliberate violation of each rule, and stay
// quiet where the architecture allows the same code. The snippets are linted in memory under a
// virtual file name, so no fixture file exists for `npm run lint` to trip on.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ESLint } from 'eslint'

const ROOT = new URL('../../', import.meta.url).pathname
const RULES = new Set(['no-restricted-imports', 'no-restricted-properties'])

// The project's own config, minus type information (the virtual files are in no tsconfig) and
// minus every rule but the architecture's, so the snippets need not be otherwise lint-clean.
const eslint = new ESLint({
  cwd: ROOT,
  overrideConfig: { files: ['**/*.ts'], languageOptions: { parserOptions: { projectService: false } } },
  ruleFilter: ({ ruleId }) => RULES.has(ruleId)
})

async function problems (filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: ROOT + filePath })
  assert.ok(result)
  return result.messages.map((message) => `${message.ruleId ?? 'fatal'}: ${message.message}`)
}

const DRIVER = 'services, store ports and shared/ never import Fastify or a driver: only http/, storage/ and infra.ts do (docs/architecture.md)'
const HTTP = 'http/ is the request pipeline, installed by app.ts: storage/, infra.ts, services, ports and shared/ never import http/ (docs/architecture.md)'
const STORAGE = 'services, ports and shared/ depend on ports, never on a storage engine (docs/architecture.md)'
const FEATURE = 'shared/ is below every feature: it never imports a feature module (docs/architecture.md)'
const KEYS_FROM_HTTP = 'http/ never imports keys/: the access hook reads keys through access/ (docs/architecture.md)'
const ACCESS_FROM_KEYS = 'keys/ never imports access/: the guard uses key administration, never the reverse (docs/architecture.md)'
const HTTP_FROM_KEYS = 'keys/ never imports http/, but for its route module: the access hook is in http/, the key rules below it (docs/architecture.md)'
const HTTP_FROM_ACCESS = 'access/ never imports http/: http/access.ts calls it and turns its decisions into headers, never the reverse (docs/architecture.md)'
const TEMP = 'use tempDir or keptDir from test/helpers/temp.ts'
const ENV = 'only src/config.ts, the CLI entry (src/cli/main.ts, src/cli/io.ts) and tests read the environment: take a Config instead'

const violations: Array<{ rule: string; file: string; code: string; expected: string[] }> = [
  { rule: 'a service imports Fastify', file: 'src/pets/pets.service.ts', code: "import type { FastifyInstance } from 'fastify'\n", expected: [`no-restricted-imports: 'fastify' import is restricted from being used. ${DRIVER}`] },
  { rule: 'a service imports a Fastify plugin', file: 'src/orders/orders.service.ts', code: "import cors from '@fastify/cors'\n", expected: [`no-restricted-imports: '@fastify/cors' import is restricted from being used by a pattern. ${DRIVER}`] },
  { rule: 'a store port imports pg', file: 'src/orders/orders.store.ts', code: "import type { Pool } from 'pg'\n", expected: [`no-restricted-imports: 'pg' import is restricted from being used. ${DRIVER}`] },
  { rule: 'a store port imports node:sqlite', file: 'src/pets/pets.store.ts', code: "import type { DatabaseSync } from 'node:sqlite'\n", expected: [`no-restricted-imports: 'node:sqlite' import is restricted from being used. ${DRIVER}`] },
  { rule: 'a rules module imports ioredis', file: 'src/inventory/inventory.rules.ts', code: "import { Redis } from 'ioredis'\n", expected: [`no-restricted-imports: 'ioredis' import is restricted from being used. ${DRIVER}`] },
  { rule: 'shared/ imports a driver', file: 'src/shared/store.ts', code: "import { Redis } from 'ioredis'\n", expected: [`no-restricted-imports: 'ioredis' import is restricted from being used. ${DRIVER}`] },
  { rule: 'a service imports http/', file: 'src/keys/keys.service.ts', code: "import { x } from '../http/errors.ts'\n", expected: [`no-restricted-imports: '../http/errors.ts' import is restricted from being used by a pattern. ${HTTP}`] },
  { rule: 'a service imports a storage engine', file: 'src/categories/categories.service.ts', code: "import { x } from '../storage/sqlite/categories.ts'\n", expected: [`no-restricted-imports: '../storage/sqlite/categories.ts' import is restricted from being used by a pattern. ${STORAGE}`] },
  { rule: 'storage/ imports http/', file: 'src/storage/sqlite/pets.ts', code: "import { x } from '../../http/errors.ts'\n", expected: [`no-restricted-imports: '../../http/errors.ts' import is restricted from being used by a pattern. ${HTTP}`] },
  { rule: 'infra.ts imports http/', file: 'src/infra.ts', code: "import type { Readiness } from './http/meta.ts'\n", expected: [`no-restricted-imports: './http/meta.ts' import is restricted from being used by a pattern. ${HTTP}`] },
  { rule: 'shared/ imports a feature module', file: 'src/shared/pagination.ts', code: "import { x } from '../pets/pets.schema.ts'\n", expected: [`no-restricted-imports: '../pets/pets.schema.ts' import is restricted from being used by a pattern. ${FEATURE}`] },
  { rule: 'shared/ imports the rate limiter', file: 'src/shared/clock.ts', code: "import { x } from '../ratelimit/limiter.ts'\n", expected: [`no-restricted-imports: '../ratelimit/limiter.ts' import is restricted from being used by a pattern. ${FEATURE}`] },
  { rule: 'the access hook imports keys/', file: 'src/http/access.ts', code: "import type { Role } from '../keys/keys.schema.ts'\n", expected: [`no-restricted-imports: '../keys/keys.schema.ts' import is restricted from being used by a pattern. ${KEYS_FROM_HTTP}`] },
  { rule: 'an HTTP plugin imports the keys store port', file: 'src/http/usage.ts', code: "import type { KeyStore } from '../accounts/keys.store.ts'\n", expected: [`no-restricted-imports: '../accounts/keys.store.ts' import is restricted from being used by a pattern. ${KEYS_FROM_HTTP}`] },
  { rule: 'the keys view imports http/', file: 'src/keys/keys.view.ts', code: "import { x } from '../http/conditional.ts'\n", expected: [`no-restricted-imports: '../http/conditional.ts' import is restricted from being used by a pattern. ${HTTP_FROM_KEYS}`] },
  { rule: 'the keys service imports access/', file: 'src/keys/keys.service.ts', code: "import { x } from '../access/usage.ts'\n", expected: [`no-restricted-imports: '../access/usage.ts' import is restricted from being used by a pattern. ${ACCESS_FROM_KEYS}`] },
  { rule: 'the keys route module imports access/', file: 'src/keys/keys.routes.ts', code: "import { x } from '../access/access.service.ts'\n", expected: [`no-restricted-imports: '../access/access.service.ts' import is restricted from being used by a pattern. ${ACCESS_FROM_KEYS}`] },
  { rule: 'the access service imports http/', file: 'src/access/access.service.ts', code: "import { x } from '../http/access.ts'\n", expected: [`no-restricted-imports: '../http/access.ts' import is restricted from being used by a pattern. ${HTTP_FROM_ACCESS}`] },
  { rule: 'the key cache imports http/', file: 'src/access/key-cache.ts', code: "import { x } from '../http/rate-limit-headers.ts'\n", expected: [`no-restricted-imports: '../http/rate-limit-headers.ts' import is restricted from being used by a pattern. ${HTTP_FROM_ACCESS}`] },
  { rule: 'access/ imports Fastify', file: 'src/access/refusals.ts', code: "import type { FastifyReply } from 'fastify'\n", expected: [`no-restricted-imports: 'fastify' import is restricted from being used. ${DRIVER}`] },
  { rule: 'an HTTP plugin reads process.env', file: 'src/http/access.ts', code: 'export const proxy = process.env.TRUST_PROXY\n', expected: [`no-restricted-properties: 'process.env' is restricted from being used. ${ENV}`] },
  { rule: 'a store destructures env from process', file: 'src/storage/postgres/database.ts', code: 'const { env } = process\nexport const url = env.DATABASE_URL\n', expected: [`no-restricted-properties: 'process.env' is restricted from being used. ${ENV}`] },
  { rule: 'a service imports env from node:process', file: 'src/pets/pets.service.ts', code: "import { env } from 'node:process'\nexport const level = env.LOG_LEVEL\n", expected: [`no-restricted-imports: 'env' import from 'node:process' is restricted. ${ENV}`] },
  { rule: 'a CLI command reads process.env', file: 'src/cli/keys.ts', code: 'export const url = process.env.DATABASE_URL\n', expected: [`no-restricted-properties: 'process.env' is restricted from being used. ${ENV}`] },
  { rule: 'a test makes its own temporary directory', file: 'test/http/pets.test.ts', code: "import { mkdtempSync } from 'node:fs'\nexport const m = mkdtempSync\n", expected: [`no-restricted-imports: 'mkdtempSync' import from 'node:fs' is restricted. ${TEMP}`] },
  { rule: 'a client test makes its own temporary directory', file: 'clients/typescript/test/package.test.ts', code: "import { mkdtemp } from 'node:fs/promises'\nexport const m = mkdtemp\n", expected: [`no-restricted-imports: 'mkdtemp' import from 'node:fs/promises' is restricted. ${TEMP}`] }
]

for (const { rule, file, code, expected } of violations) {
  test(`lint reports it when ${rule} (${file})`, async () => {
    assert.deepEqual(await problems(file, code), expected)
  })
}

const allowed: Array<{ what: string; file: string; code: string }> = [
  { what: 'an HTTP plugin imports Fastify', file: 'src/http/errors.ts', code: "import type { FastifyInstance } from 'fastify'\nexport type App = FastifyInstance\n" },
  { what: 'a storage engine imports its driver', file: 'src/storage/postgres/database.ts', code: "import type { Pool } from 'pg'\nexport type P = Pool\n" },
  { what: 'infra.ts imports ioredis and a storage engine', file: 'src/infra.ts', code: "import { Redis } from 'ioredis'\nimport { x } from './storage/sqlite/index.ts'\nexport const r = [Redis, x]\n" },
  { what: 'a service imports its port, shared/ and the error catalogue', file: 'src/pets/pets.service.ts', code: "import type { PetStore } from './pets.store.ts'\nimport { x } from '../shared/pagination.ts'\nimport { AppError } from '../errors.ts'\nexport type S = [PetStore, typeof x, typeof AppError]\n" },
  { what: 'src/config.ts reads process.env', file: 'src/config.ts', code: 'export const env = process.env\n' },
  { what: 'the CLI entry hands process.env to the commands', file: 'src/cli/io.ts', code: 'export const env = process.env\n' },
  { what: 'a test reads process.env', file: 'test/helpers/stores.ts', code: 'export const url = process.env.PETSTORE_TEST_POSTGRES_URL\n' },
  { what: 'the temp helper makes temporary directories', file: 'test/helpers/temp.ts', code: "import { mkdtempSync } from 'node:fs'\nexport const m = mkdtempSync\n" },
  { what: 'the access hook imports access/', file: 'src/http/access.ts', code: "import type { AccessService } from '../access/access.service.ts'\nexport type A = AccessService\n" },
  { what: 'access/ imports the key rules, the keys port and the limiter', file: 'src/access/key-cache.ts', code: "import { isExpired } from '../accounts/keys.rules.ts'\nimport type { KeyStore } from '../accounts/keys.store.ts'\nimport type { Quota } from '../ratelimit/limiter.ts'\nexport type K = [typeof isExpired, KeyStore, Quota]\n" },
  { what: 'the keys route module imports http/, like every feature\'s', file: 'src/keys/keys.routes.ts', code: "import { etagOf } from '../http/conditional.ts'\nexport const e = etagOf\n" },
  { what: 'a route module imports http/ and a feature', file: 'src/orders/orders.routes.ts', code: "import { x } from '../http/route-config.ts'\nimport { y } from '../pets/pets.schema.ts'\nexport const z = [x, y]\n" }
]

for (const { what, file, code } of allowed) {
  test(`lint allows it when ${what} (${file})`, async () => {
    assert.deepEqual(await problems(file, code), [])
  })
}
