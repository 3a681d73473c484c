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
const HTTP = 'http/ is the request pipeline, installed by app.ts: only the top (app.ts, server.ts, cli/, openapi/, ops/) imports it (docs/architecture.md)'
const STORAGE = 'services, ports and shared/ depend on ports, never on a storage engine (docs/architecture.md)'
const FOUNDATION = 'shared/, ratelimit/ and accounts/ are the foundation: each imports only the foundation folders below it and errors.ts, never a feature, the pipeline or a root module (docs/architecture.md)'
const PIPELINE = 'access/, routing/, http/ and transport/ are the request pipeline: they never import a feature, app.ts registers the features (docs/architecture.md)'
const ROUTES = 'a route module calls its service: it never imports storage/ or a driver (pg, node:sqlite, ioredis) (docs/architecture.md)'
const HTTP_FROM_ACCESS = 'access/ never imports http/: http/access.ts calls it and turns its decisions into headers, never the reverse (docs/architecture.md)'
const TEMP = 'use tempDir or keptDir from test/helpers/temp.ts'
const ENV = 'only src/config.ts, the CLI entry (src/cli/main.ts, src/cli/io.ts) and tests read the environment: take a Config instead'

/** The message of a restricted module path, and of a restricted pattern. */
const byPath = (path: string, message: string): string => `no-restricted-imports: '${path}' import is restricted from being used. ${message}`
const byPattern = (path: string, message: string): string => `no-restricted-imports: '${path}' import is restricted from being used by a pattern. ${message}`
const importing = (path: string): string => `import { x } from '${path}'\nexport const y = x\n`

const violations: Array<{ rule: string; file: string; code: string; expected: string[] }> = [
  { rule: 'a service imports Fastify', file: 'src/pets/pets.service.ts', code: "import type { FastifyInstance } from 'fastify'\n", expected: [byPath('fastify', DRIVER)] },
  { rule: 'a service imports a Fastify plugin', file: 'src/orders/orders.service.ts', code: "import cors from '@fastify/cors'\n", expected: [byPattern('@fastify/cors', DRIVER)] },
  { rule: 'a store port imports pg', file: 'src/orders/orders.store.ts', code: "import type { Pool } from 'pg'\n", expected: [byPath('pg', DRIVER)] },
  { rule: 'a store port imports node:sqlite', file: 'src/pets/pets.store.ts', code: "import type { DatabaseSync } from 'node:sqlite'\n", expected: [byPath('node:sqlite', DRIVER)] },
  { rule: 'a rules module imports ioredis', file: 'src/inventory/inventory.rules.ts', code: "import { Redis } from 'ioredis'\n", expected: [byPath('ioredis', DRIVER)] },
  { rule: 'shared/ imports a driver', file: 'src/shared/store.ts', code: "import { Redis } from 'ioredis'\n", expected: [byPath('ioredis', DRIVER)] },
  { rule: 'a service imports http/', file: 'src/keys/keys.service.ts', code: importing('../http/errors.ts'), expected: [byPattern('../http/errors.ts', HTTP)] },
  { rule: 'a service imports a storage engine', file: 'src/categories/categories.service.ts', code: importing('../storage/sqlite/categories.ts'), expected: [byPattern('../storage/sqlite/categories.ts', STORAGE)] },
  { rule: 'storage/ imports http/', file: 'src/storage/sqlite/pets.ts', code: importing('../../http/errors.ts'), expected: [byPattern('../../http/errors.ts', HTTP)] },
  { rule: 'infra.ts imports http/', file: 'src/infra.ts', code: "import type { Readiness } from './http/meta.ts'\n", expected: [byPattern('./http/meta.ts', HTTP)] },
  { rule: 'the keys view imports http/', file: 'src/keys/keys.view.ts', code: importing('../http/errors.ts'), expected: [byPattern('../http/errors.ts', HTTP)] },
  // Route modules: no storage, no driver, no pipeline (their helpers are routing/'s).
  { rule: 'a route module imports a storage engine', file: 'src/pets/pets.routes.ts', code: importing('../storage/sqlite/pets.ts'), expected: [byPattern('../storage/sqlite/pets.ts', ROUTES)] },
  { rule: 'a route module imports pg', file: 'src/orders/orders.routes.ts', code: "import type { Pool } from 'pg'\n", expected: [byPath('pg', ROUTES)] },
  { rule: 'a route module imports node:sqlite', file: 'src/keys/keys.routes.ts', code: "import type { DatabaseSync } from 'node:sqlite'\n", expected: [byPath('node:sqlite', ROUTES)] },
  { rule: 'a route module imports ioredis', file: 'src/rate-limit-status/rate-limit-status.routes.ts', code: "import { Redis } from 'ioredis'\n", expected: [byPath('ioredis', ROUTES)] },
  { rule: 'a route module imports a pg- package', file: 'src/categories/categories.routes.ts', code: "import x from 'pg-cursor'\n", expected: [byPattern('pg-cursor', ROUTES)] },
  { rule: 'a route module imports http/', file: 'src/keys/keys.routes.ts', code: importing('../http/access.ts'), expected: [byPattern('../http/access.ts', HTTP)] },
  // The foundation imports nothing above it; the feature list is read from src/, so
  // rate-limit-status/ is a feature without being typed in any list.
  { rule: 'shared/ imports a feature module', file: 'src/shared/pagination.ts', code: importing('../pets/pets.schema.ts'), expected: [byPattern('../pets/pets.schema.ts', FOUNDATION)] },
  { rule: 'shared/ imports the rate limiter', file: 'src/shared/clock.ts', code: importing('../ratelimit/limiter.ts'), expected: [byPattern('../ratelimit/limiter.ts', FOUNDATION)] },
  { rule: 'shared/ imports accounts/', file: 'src/shared/store.ts', code: importing('../accounts/plans.ts'), expected: [byPattern('../accounts/plans.ts', FOUNDATION)] },
  { rule: 'accounts/ imports key administration', file: 'src/accounts/keys.rules.ts', code: importing('../keys/keys.service.ts'), expected: [byPattern('../keys/keys.service.ts', FOUNDATION)] },
  { rule: 'accounts/ imports the access check', file: 'src/accounts/caller.ts', code: importing('../access/principal.ts'), expected: [byPattern('../access/principal.ts', FOUNDATION)] },
  { rule: 'accounts/ imports config.ts', file: 'src/accounts/plans.ts', code: importing('../config.ts'), expected: [byPattern('../config.ts', FOUNDATION)] },
  { rule: 'accounts/ imports a feature read from the disk', file: 'src/accounts/plans.ts', code: importing('../rate-limit-status/rate-limit-status.schema.ts'), expected: [byPattern('../rate-limit-status/rate-limit-status.schema.ts', FOUNDATION)] },
  { rule: 'the key port imports a driver', file: 'src/accounts/keys.store.ts', code: "import type { Pool } from 'pg'\n", expected: [byPath('pg', DRIVER)] },
  { rule: 'the limiter imports accounts/', file: 'src/ratelimit/limiter.ts', code: importing('../accounts/plans.ts'), expected: [byPattern('../accounts/plans.ts', FOUNDATION)] },
  // The pipeline imports no feature.
  { rule: 'the access hook imports keys/', file: 'src/http/access.ts', code: "import type { KeyAdmin } from '../keys/keys.service.ts'\n", expected: [byPattern('../keys/keys.service.ts', PIPELINE)] },
  { rule: 'an HTTP plugin imports a feature read from the disk', file: 'src/http/usage.ts', code: importing('../rate-limit-status/rate-limit-status.schema.ts'), expected: [byPattern('../rate-limit-status/rate-limit-status.schema.ts', PIPELINE)] },
  { rule: 'access/ imports key administration', file: 'src/access/key-cache.ts', code: importing('../keys/keys.service.ts'), expected: [byPattern('../keys/keys.service.ts', PIPELINE)] },
  { rule: 'a route helper imports a feature', file: 'src/routing/conditional.ts', code: importing('../pets/pets.schema.ts'), expected: [byPattern('../pets/pets.schema.ts', PIPELINE)] },
  { rule: 'the transport imports http/', file: 'src/transport/static.ts', code: importing('../http/errors.ts'), expected: [byPattern('../http/errors.ts', HTTP)] },
  { rule: 'the access service imports http/', file: 'src/access/access.service.ts', code: importing('../http/access.ts'), expected: [byPattern('../http/access.ts', HTTP_FROM_ACCESS)] },
  { rule: 'the key cache imports http/', file: 'src/access/key-cache.ts', code: importing('../http/rate-limit-headers.ts'), expected: [byPattern('../http/rate-limit-headers.ts', HTTP_FROM_ACCESS)] },
  { rule: 'access/ imports Fastify', file: 'src/access/refusals.ts', code: "import type { FastifyReply } from 'fastify'\n", expected: [byPath('fastify', DRIVER)] },
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
  { what: 'the access hook imports access/ and routing/', file: 'src/http/access.ts', code: "import type { AccessService } from '../access/access.service.ts'\nimport { routeConfigOf } from '../routing/route-config.ts'\nexport type A = [AccessService, typeof routeConfigOf]\n" },
  { what: 'access/ imports the key rules, the keys port, the plans and the limiter', file: 'src/access/key-cache.ts', code: "import { isExpired } from '../accounts/keys.rules.ts'\nimport type { KeyStore } from '../accounts/keys.store.ts'\nimport { ROLE_RANK } from '../accounts/plans.ts'\nimport type { Quota } from '../ratelimit/limiter.ts'\nexport type K = [typeof isExpired, KeyStore, typeof ROLE_RANK, Quota]\n" },
  { what: 'accounts/ imports shared/, the limiter and the error catalogue', file: 'src/accounts/keys.rules.ts', code: "import { x } from '../shared/store.ts'\nimport { DAY_MS } from '../ratelimit/limiter.ts'\nimport { AppError } from '../errors.ts'\nexport const y = [x, DAY_MS, AppError]\n" },
  { what: 'the limiter engine imports ioredis', file: 'src/ratelimit/redis.ts', code: "import { Redis } from 'ioredis'\nexport const r = Redis\n" },
  { what: 'the keys route module imports routing/, like every feature\'s', file: 'src/keys/keys.routes.ts', code: "import { etagOf } from '../routing/conditional.ts'\nexport const e = etagOf\n" },
  { what: 'a route module imports routing/, access/, accounts/ and a feature', file: 'src/orders/orders.routes.ts', code: "import { x } from '../routing/route-config.ts'\nimport { requireCaller } from '../access/principal.ts'\nimport type { Plan } from '../accounts/plans.ts'\nimport { y } from '../pets/pets.schema.ts'\nexport const z = [x, y, requireCaller]\nexport type P = Plan\n" },
  { what: 'a route module imports Fastify', file: 'src/pets/pets.routes.ts', code: "import type { FastifyInstance } from 'fastify'\nexport type App = FastifyInstance\n" },
  { what: 'a storage engine implements the key port', file: 'src/storage/sqlite/keys.ts', code: "import type { KeyStore } from '../../accounts/keys.store.ts'\nexport type K = KeyStore\n" }
]

for (const { what, file, code } of allowed) {
  test(`lint allows it when ${what} (${file})`, async () => {
    assert.deepEqual(await problems(file, code), [])
  })
}
