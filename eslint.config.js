// Lint config: the recommended JS and TypeScript rules, type-aware where it pays (promises), and
// the architecture of docs/architecture.md as rules (test/lint/architecture.test.ts shows that
// each one reports a deliberate violation).
import { readdirSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import js from '@eslint/js'
import stylistic from '@stylistic/eslint-plugin'
import tseslint from 'typescript-eslint'

// --- The architecture -------------------------------------------------------------------------

// The folders and root modules of src/, read from the disk: a new folder is placed by the rules
// below (a feature unless named as something else) without editing a list.
const SRC_ENTRIES = readdirSync(join(import.meta.dirname, 'src'), { withFileTypes: true })
export const SRC_FOLDERS = SRC_ENTRIES.filter((entry) => entry.isDirectory()).map((entry) => entry.name).sort()
export const SRC_MODULES = SRC_ENTRIES
  .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
  .map((entry) => entry.name)
  .sort()

// The layers, bottom up (docs/architecture.md). The foundation: what every other folder stands
// on, each foundation folder importing only the ones named for it and errors.ts. accounts/ is
// the key model (roles, plans, quotas, the key port and rules, the caller).
export const FOUNDATION = { shared: [], ratelimit: ['shared'], accounts: ['shared', 'ratelimit'] }
// The request pipeline: the guard (access/), the route declarations and helpers routes use
// (routing/), the hooks (http/), the transport under them (transport/). It never imports a feature.
export const PIPELINE = ['access', 'routing', 'http', 'transport']
// The top, composed by app.ts, server.ts and the CLI; then the engines (storage/), the entries
// (cli/), background work (jobs/) and tracing (telemetry/: its seams are read by the pipeline and
// the SQLite writer), which are neither features nor the pipeline.
export const TOP_FOLDERS = ['openapi', 'ops']
export const OTHER_FOLDERS = ['storage', 'cli', 'jobs', 'telemetry']
// Every other folder is a feature: its routes, service, store port and schema.
export const FEATURES = SRC_FOLDERS.filter((name) =>
  !(name in FOUNDATION) && ![...PIPELINE, ...TOP_FOLDERS, ...OTHER_FOLDERS].includes(name))

const folderPattern = (names) => `(^|/)(${names.join('|')})/`
const escapeName = (name) => name.replace(/[.]/g, '\\.')

// Services and store ports hold the rules; they must run without a framework or a driver.
const DRIVERS = {
  paths: ['fastify', 'pg', 'node:sqlite', 'ioredis'].map((name) => ({
    name,
    message: 'services, store ports and shared/ never import Fastify or a driver: only http/, storage/ and infra.ts do (docs/architecture.md)'
  })),
  patterns: [{
    regex: '^(@fastify/|fastify-|pg-)',
    message: 'services, store ports and shared/ never import Fastify or a driver: only http/, storage/ and infra.ts do (docs/architecture.md)'
  }]
}
// Route modules speak HTTP and call a service: the store and its engine are behind the service.
const ROUTES_MESSAGE = 'a route module calls its service: it never imports storage/ or a driver (pg, node:sqlite, ioredis) (docs/architecture.md)'
const ROUTES = {
  paths: ['pg', 'node:sqlite', 'ioredis'].map((name) => ({ name, message: ROUTES_MESSAGE })),
  patterns: [{ regex: '^pg-', message: ROUTES_MESSAGE }, { regex: '(^|/)storage/', message: ROUTES_MESSAGE }]
}
// http/ is the request pipeline that app.ts installs: nothing it calls may reach back into it.
const HTTP = {
  paths: [],
  patterns: [{ regex: '(^|/)http/', message: 'http/ is the request pipeline, installed by app.ts: only the top (app.ts, server.ts, cli/, openapi/, ops/) imports it (docs/architecture.md)' }]
}
// openapi/ (the document, its passes, the docs page) and ops/ (health, readiness, metrics) sit at
// the top beside the routes: app.ts composes them, server.ts and the CLI hand them their
// dependencies. Nothing else reaches into them, so neither a feature nor the request pipeline
// depends on how the API is documented or observed, and both folders can change alone.
const TOP = {
  paths: [],
  patterns: [{ regex: folderPattern(TOP_FOLDERS), message: 'openapi/ and ops/ are composed by app.ts (and handed their dependencies by server.ts and cli/): nothing else imports them (docs/architecture.md)' }]
}
const STORAGE = {
  paths: [],
  patterns: [{ regex: '(^|/)storage/', message: 'services, ports and shared/ depend on ports, never on a storage engine (docs/architecture.md)' }]
}
// A foundation folder imports only the foundation folders below it and errors.ts: no feature, no
// pipeline, no storage, no root module (openapi/ and ops/ have their own message, TOP).
const FOUNDATION_MESSAGE = 'shared/, ratelimit/ and accounts/ are the foundation: each imports only the foundation folders below it and errors.ts, never a feature, the pipeline or a root module (docs/architecture.md)'
function foundation (name) {
  const above = SRC_FOLDERS.filter((folder) =>
    folder !== name && !FOUNDATION[name].includes(folder) && !TOP_FOLDERS.includes(folder))
  const modules = SRC_MODULES.filter((module) => module !== 'errors.ts').map(escapeName)
  return {
    paths: [],
    patterns: [
      { regex: folderPattern(above), message: FOUNDATION_MESSAGE },
      { regex: `^(\\.\\./)+(${modules.join('|')})$`, message: FOUNDATION_MESSAGE }
    ]
  }
}
// The pipeline runs every request before any feature: app.ts registers the features, the
// pipeline never imports one (the access hook reads keys through access/ and accounts/).
const FEATURES_FROM_PIPELINE = {
  paths: [],
  patterns: [{ regex: folderPattern(FEATURES), message: 'access/, routing/, http/ and transport/ are the request pipeline: they never import a feature, app.ts registers the features (docs/architecture.md)' }]
}
// access/ decides; http/access.ts turns its decisions into headers: never the reverse.
const HTTP_FROM_ACCESS = {
  paths: [],
  patterns: [{ regex: '(^|/)http/', message: 'access/ never imports http/: http/access.ts calls it and turns its decisions into headers, never the reverse (docs/architecture.md)' }]
}
// No folder import loop is left: test/lint/folder-graph.test.ts builds the folder graph of src/
// from its import statements and fails on any cycle, and on any foundation import upwards.

// A feature imports another feature only where this list says so, each with its reason
// (local/feature-imports, shown by test/lint/feature-imports.test.ts); any other import between
// features is reported. A feature absent from the list imports no other feature.
export const FEATURE_IMPORTS = {
  // Each change's audit action is its event type's, read from the event catalogue.
  audit: ['events'],
  // The event catalogue declares each type's data with the feature's own schema, record and view,
  // so an event shows its resource as a GET of it does.
  events: ['categories', 'inventory', 'keys', 'orders', 'pets'],
  // An inventory entry is a view of the pet row (its id, its status), and a stock change sweeps the
  // pet's lapsed orders under the orders' policy (cool-down, low-stock threshold).
  inventory: ['orders', 'pets'],
  // /v1/keys/me is key administration's key seen by its holder: the same schemas, state and view.
  'key-holder': ['keys'],
  // Webhooks deliver the event feed: the catalogue's types and audiences (subscriptions, who
  // receives what), the events port they fan out from, and the rendering of stored data.
  webhooks: ['events']
}
const FEATURE_IMPORTS_MESSAGE = (from, to) =>
  `src/${from}/ may not import src/${to}/: a feature imports another only where FEATURE_IMPORTS in eslint.config.js allows it, with its reason (docs/architecture.md)`

/**
 * One `no-restricted-imports` setting from several groups (a later config block would replace, not
 * add to, an earlier one).
 */
function restrictImports (...groups) {
  return ['error', {
    paths: groups.flatMap((group) => group.paths),
    patterns: groups.flatMap((group) => group.patterns)
  }]
}

// Only src/config.ts reads the environment (loadConfig(env) is a pure function of it), plus the
// CLI entry that hands process.env to it; tests and bench are entries of their own.
const PROCESS_ENV_MESSAGE = 'only src/config.ts, the CLI entry (src/cli/main.ts, src/cli/io.ts) and tests read the environment: take a Config instead'
const PROCESS_ENV = {
  paths: ['process', 'node:process'].map((name) => ({ name, importNames: ['env'], message: PROCESS_ENV_MESSAGE })),
  patterns: []
}

// --- Optional calls -----------------------------------------------------------------------------

// `f?.(await g())` skips its whole argument list when f is nullish, so g() never runs: that hid a
// CLI revoke that revoked nothing (issue 18). The same holds for every call whose chain can stop
// before it (`obj?.m(g())`, `a?.b.c(g())`). So the arguments of such a call may not do work of
// their own: no await, no call, no `new`, no assignment, no ++/--, no yield, no delete. Compute
// first, into a const, then call. Functions passed as arguments are not run there, so their
// bodies are not checked.
const OPTIONAL_CALL_MESSAGE = 'the arguments of an optional call are skipped when the chain stops (f?.(await g()) never runs g()): compute the value into a const first, then call'

/** True when the call's own chain can stop before it: `f?.()`, `a?.m()`, `a?.b.c()`, `a?.()()`. */
function canShortCircuit (call) {
  let node = call
  while (node.type === 'CallExpression' || node.type === 'MemberExpression') {
    if (node.optional) return true
    node = node.type === 'CallExpression' ? node.callee : node.object
  }
  return false
}

const EFFECTS = new Set(['AwaitExpression', 'CallExpression', 'NewExpression', 'AssignmentExpression', 'UpdateExpression', 'YieldExpression', 'TaggedTemplateExpression', 'ImportExpression'])
const NOT_RUN_HERE = new Set(['ArrowFunctionExpression', 'FunctionExpression', 'ClassExpression'])

/** The first node under `node` that does work when evaluated, functions' bodies excepted. */
function firstEffect (node, visitorKeys) {
  if (node === null || typeof node !== 'object' || typeof node.type !== 'string') return null
  if (NOT_RUN_HERE.has(node.type)) return null
  if (EFFECTS.has(node.type) || (node.type === 'UnaryExpression' && node.operator === 'delete')) return node
  for (const key of visitorKeys[node.type] ?? []) {
    const child = node[key]
    for (const item of Array.isArray(child) ? child : [child]) {
      const found = firstEffect(item, visitorKeys)
      if (found !== null) return found
    }
  }
  return null
}

// --- Background work ----------------------------------------------------------------------------

// A repeating timer starts in src/jobs/ only (issue 29): there it is declared, stopped on close,
// unref'ed, and its failures logged and counted. Any mention of setInterval elsewhere is
// reported, whatever the way in (the global, globalThis.setInterval, node:timers,
// timers/promises' async iterator). A one-shot setTimeout (a deadline, a retry within a call) is
// not background work and stays allowed. An exception is a disable comment on its line, with
// its reason; test/lint/repeating-timer.test.ts holds the list of them.
const REPEATING_TIMER_MESSAGE = 'a repeating timer is background work: declare a job in src/jobs/jobs.ts (docs/architecture.md "Background jobs"); a one-shot setTimeout for a deadline is fine'

// Lines of at most 120 columns (issue 47): a reader sees a statement whole. Literals are not
// counted (a message, a fixture or a pattern reads better unbroken), nor URLs in comments;
// the code around them is. @stylistic/max-len's ignoreStrings would let any line holding a
// string run on for hundreds of columns.
const MAX_LINE = 120
const MAX_LINE_MESSAGE = `a line of at most ${MAX_LINE} columns, string, template and regular expression literals aside: break it`

const SRC = join(import.meta.dirname, 'src')

/** The feature a path under src/ belongs to, or undefined. */
function featureOf (path) {
  const [first, second] = relative(SRC, path).split(sep)
  return second !== undefined && FEATURES.includes(first) ? first : undefined
}

const LOCAL = {
  rules: {
    'feature-imports': {
      meta: { type: 'problem', docs: { description: 'a feature imports another only where FEATURE_IMPORTS allows it' }, schema: [] },
      create (context) {
        const from = featureOf(context.filename)
        if (from === undefined) return {}
        const check = (source) => {
          if (source?.type !== 'Literal' || typeof source.value !== 'string' || !source.value.startsWith('.')) return
          const to = featureOf(resolve(dirname(context.filename), source.value))
          if (to === undefined || to === from || FEATURE_IMPORTS[from]?.includes(to)) return
          context.report({ node: source, message: FEATURE_IMPORTS_MESSAGE(from, to) })
        }
        return {
          ImportDeclaration: (node) => { check(node.source) },
          ExportNamedDeclaration: (node) => { check(node.source) },
          ExportAllDeclaration: (node) => { check(node.source) },
          ImportExpression: (node) => { check(node.source) }
        }
      }
    },
    'no-repeating-timer': {
      meta: { type: 'problem', docs: { description: 'forbid setInterval outside src/jobs/' }, schema: [] },
      create (context) {
        return {
          Identifier (node) {
            if (node.name === 'setInterval') context.report({ node, message: REPEATING_TIMER_MESSAGE })
          },
          // timers['setInterval'] names it in a string.
          Literal (node) {
            const member = node.parent?.type === 'MemberExpression' && node.parent.property === node
            if (node.value === 'setInterval' && member) context.report({ node, message: REPEATING_TIMER_MESSAGE })
          }
        }
      }
    },
    'max-len': {
      meta: { type: 'layout', docs: { description: 'a line of code at most 120 columns, its literals aside' }, schema: [] },
      create (context) {
        return {
          'Program:exit' () {
            const source = context.sourceCode
            const lines = source.lines
            // What a line's length does not count: the text of string, template and regular
            // expression literals, and URLs in comments (they cannot be broken without harm).
            const excepted = new Array(lines.length).fill(0)
            const except = (start, end) => {
              for (let line = start.line; line <= end.line; line++) {
                const from = line === start.line ? start.column : 0
                const to = line === end.line ? end.column : lines[line - 1].length
                excepted[line - 1] += Math.max(0, to - from)
              }
            }
            for (const token of source.ast.tokens) {
              if (token.type === 'String' || token.type === 'Template' || token.type === 'RegularExpression') except(token.loc.start, token.loc.end)
            }
            for (const comment of source.getAllComments()) {
              for (const match of comment.value.matchAll(/\bhttps?:\/\/\S+/g)) {
                const offset = comment.range[0] + 2 + match.index
                except(source.getLocFromIndex(offset), source.getLocFromIndex(offset + match[0].length))
              }
            }
            lines.forEach((text, index) => {
              if (text.length <= MAX_LINE || text.length - excepted[index] <= MAX_LINE) return
              // A shebang cannot be broken.
              if (index === 0 && text.startsWith('#!')) return
              context.report({ loc: { line: index + 1, column: MAX_LINE }, message: MAX_LINE_MESSAGE })
            })
          }
        }
      }
    },
    'no-effects-in-optional-call': {
      meta: { type: 'problem', docs: { description: 'forbid await and calls in the arguments of an optional call' }, schema: [] },
      create (context) {
        const visitorKeys = context.sourceCode.visitorKeys
        return {
          CallExpression (call) {
            if (!canShortCircuit(call)) return
            for (const argument of call.arguments) {
              const effect = firstEffect(argument, visitorKeys)
              if (effect !== null) context.report({ node: effect, message: OPTIONAL_CALL_MESSAGE })
            }
          }
        }
      }
    }
  }
}

// --- The formatting rule set -------------------------------------------------------------------

// One formatting rule set (@stylistic) for every file: `npx eslint --fix .` applies it.
// The options follow the style most of the code already has, so that --fix changes little: the
// main change is `function f(` (ratelimit/) becoming `function f (` like the 75 other files.
const FORMATTING = {
  files: ['**/*.ts', '**/*.js', '**/*.mjs'],
  plugins: { '@stylistic': stylistic },
  rules: {
    ...stylistic.configs.customize({ indent: 2, quotes: 'single', semi: false, commaDangle: 'never', braceStyle: '1tbs', jsx: false }).rules,
    '@stylistic/space-before-function-paren': ['error', 'always'],
    '@stylistic/arrow-parens': ['error', 'always'],
    '@stylistic/generator-star-spacing': ['error', { before: true, after: true }],
    '@stylistic/yield-star-spacing': ['error', { before: true, after: true }],
    '@stylistic/quotes': ['error', 'single', { avoidEscape: true, allowTemplateLiterals: 'always' }],
    '@stylistic/quote-props': ['error', 'as-needed'],
    // Binary operators lead the continued line (the majority); `=` stays at the end, so a union
    // type's members start with `|` under its name.
    '@stylistic/operator-linebreak': ['error', 'before', { overrides: { '=': 'after' } }],
    '@stylistic/member-delimiter-style': ['error', { multiline: { delimiter: 'none' }, singleline: { delimiter: 'semi', requireLast: false } }],
    // `t.after(() => { a(); b() })`-style one-liners are common and read well; --fix cannot split them.
    '@stylistic/max-statements-per-line': 'off'
  }
}

export default tseslint.config(
  { ignores: ['node_modules/', '.stryker/', 'data/', 'docs/', 'coverage/', '.tmp/', 'bench/results/',
    // Generated by openapi-typescript and diffed by a test: a formatting pass must not touch it.
    'clients/typescript/src/openapi.ts',
    // The client's build output (npm pack), compiled by tsc.
    'clients/typescript/dist/',
    // Scalar's browser bundle, copied unchanged from its npm package (scripts/vendor-scalar.ts).
    'src/openapi/docs/vendor/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname }
    },
    rules: {
      '@typescript-eslint/no-floating-promises': ['error', {
        // node:test's test() returns a promise the runner awaits itself.
        allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'it', 'describe', 'suite', 'before', 'after', 'beforeEach', 'afterEach'] }]
      }],
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-syntax': ['error',
        { selector: 'TSEnumDeclaration', message: 'enums are not erasable; use a union of literals' },
        { selector: 'TSParameterProperty', message: 'parameter properties are not erasable' }
      ]
    }
  },
  {
    files: ['**/*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } }
  },
  // The environment, then the layers. A later block replaces an earlier block's setting of the same
  // rule, so each layer repeats PROCESS_ENV, and the layers' file groups do not overlap.
  {
    files: ['src/**/*.ts'],
    ignores: ['src/config.ts', 'src/cli/main.ts', 'src/cli/io.ts'],
    rules: {
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: PROCESS_ENV_MESSAGE }],
      'no-restricted-imports': restrictImports(PROCESS_ENV, HTTP, TOP)
    }
  },
  {
    files: ['src/app.ts', 'src/server.ts', 'src/cli/**/*.ts', 'src/openapi/**/*.ts', 'src/ops/**/*.ts'],
    ignores: ['src/cli/main.ts', 'src/cli/io.ts'],
    rules: { 'no-restricted-imports': restrictImports(PROCESS_ENV) }
  },
  {
    files: ['src/*/*.service.ts', 'src/*/*.store.ts', 'src/*/*.rules.ts'],
    ignores: Object.keys(FOUNDATION).map((name) => `src/${name}/**`),
    rules: { 'no-restricted-imports': restrictImports(PROCESS_ENV, DRIVERS, HTTP, STORAGE, TOP) }
  },
  {
    files: ['src/*/*.routes.ts'],
    rules: { 'no-restricted-imports': restrictImports(PROCESS_ENV, ROUTES, HTTP, TOP) }
  },
  {
    // Like a service: no framework, no driver, no engine; and below http/.
    files: ['src/access/**/*.ts'],
    rules: { 'no-restricted-imports': restrictImports(PROCESS_ENV, DRIVERS, STORAGE, HTTP_FROM_ACCESS, FEATURES_FROM_PIPELINE, TOP) }
  },
  {
    files: ['src/http/**/*.ts'],
    rules: { 'no-restricted-imports': restrictImports(PROCESS_ENV, FEATURES_FROM_PIPELINE, STORAGE, TOP) }
  },
  {
    files: ['src/routing/**/*.ts', 'src/transport/**/*.ts'],
    rules: { 'no-restricted-imports': restrictImports(PROCESS_ENV, FEATURES_FROM_PIPELINE, HTTP, STORAGE, TOP) }
  },
  ...Object.keys(FOUNDATION).map((name) => ({
    files: [`src/${name}/**/*.ts`],
    rules: { 'no-restricted-imports': restrictImports(PROCESS_ENV, ...(name === 'ratelimit' ? [] : [DRIVERS]), foundation(name), TOP) }
  })),
  {
    files: ['src/storage/**/*.ts', 'src/infra.ts'],
    rules: { 'no-restricted-imports': restrictImports(PROCESS_ENV, HTTP, TOP) }
  },
  // Tests make temporary directories through test/helpers/temp.ts (tempDir, keptDir) only: one
  // place that removes them after the test (issue 22 item 4).
  {
    files: ['test/**/*.ts', 'clients/typescript/test/**/*.ts'],
    ignores: ['test/helpers/**'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: ['node:fs', 'fs', 'node:fs/promises', 'fs/promises'].map((name) => ({
          name, importNames: ['mkdtemp', 'mkdtempSync'], message: 'use tempDir or keptDir from test/helpers/temp.ts'
        }))
      }]
    }
  },
  {
    files: ['**/*.ts', '**/*.js', '**/*.mjs'],
    plugins: { local: LOCAL },
    rules: { 'local/no-effects-in-optional-call': 'error', 'local/max-len': 'error' }
  },
  // The server's code; src/console/*.js runs in the operator's browser, not in the process.
  {
    files: ['src/**/*.ts'],
    ignores: ['src/jobs/**'],
    rules: { 'local/no-repeating-timer': 'error' }
  },
  {
    files: ['src/**/*.ts'],
    rules: { 'local/feature-imports': 'error' }
  },
  FORMATTING
)
