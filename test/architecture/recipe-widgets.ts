// The throwaway resource that test/architecture/recipe.test.ts adds by following "Adding a
// resource" in docs/architecture.md: `widgets`, two operations (POST /v1/widgets, staff; GET
// /v1/widgets/{widgetId}, customer), one event type (widget.created, audited as widget.create),
// a table on each engine. One edit per file the recipe names, keyed by the name it gives
// (`<feature>` standing for `widgets`): the test applies only the edits of the files the recipe
// names, so a step the recipe leaves out is a step the copy misses.
import assert from 'node:assert/strict'
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'

/** Writes a new file of the copy. */
function create (root: string, path: string, text: string): void {
  mkdirSync(dirname(join(root, path)), { recursive: true })
  writeFileSync(join(root, path), text)
}

/** Changes a file of the copy: `edit` gets its text and returns the new one, which must differ. */
function change (root: string, path: string, edit: (text: string) => string): void {
  const before = readFileSync(join(root, path), 'utf8')
  const after = edit(before)
  assert.notEqual(after, before, `${path}: the recipe's edit found nothing to change (its anchor moved?)`)
  writeFileSync(join(root, path), after)
}

/** `text` with `insert` put right after the first occurrence of `anchor`. */
function after (text: string, anchor: string, insert: string): string {
  const at = text.indexOf(anchor)
  assert.ok(at >= 0, `anchor not found: ${anchor}`)
  return text.slice(0, at + anchor.length) + insert + text.slice(at + anchor.length)
}

/** `text` with `insert` put after the whole first line that holds `anchor`. */
function afterLine (text: string, anchor: string, insert: string): string {
  const at = text.indexOf(anchor)
  assert.ok(at >= 0, `anchor not found: ${anchor}`)
  const end = text.indexOf('\n', at) + 1
  return text.slice(0, end) + insert + text.slice(end)
}

/** `text` with `lines` put before its first import (imports are hoisted: their order is free). */
const withImports = (text: string, lines: string): string => text.replace(/^import /m, `${lines}\nimport `)

/** A migration entry appended to a list of migrations (the file ends with the list's `]`). */
function appendMigration (text: string, sql: string): string {
  const end = text.lastIndexOf('\n]')
  assert.ok(end >= 0, 'the migrations list ends with ]')
  return `${text.slice(0, end)},\n  // Widgets (the recipe's throwaway resource).\n  \`\n${sql}\n  \`${text.slice(end)}`
}

const SCHEMA = `// The public contract of widgets.
import { Type, type Static } from 'typebox'
import { IdParam, Int64, Name } from '../shared/schemas.ts'

export const WidgetIdParams = Type.Object({ widgetId: IdParam('The widget id.', [1]) }, { additionalProperties: false })

export const NewWidgetSchema = Type.Object({
  name: Name('Widget name, 1 to 100 characters.')
}, { title: 'NewWidget', additionalProperties: false, examples: [{ name: 'Sprocket' }] })
export type NewWidget = Static<typeof NewWidgetSchema>

export const WidgetSchema = Type.Object({
  id: Int64({ description: 'Unique identifier, assigned on creation.' }),
  name: Type.String({ description: 'Widget name.' })
}, { title: 'Widget', additionalProperties: false, examples: [{ id: 1, name: 'Sprocket' }] })
export type Widget = Static<typeof WidgetSchema>
`

const STORE = `// The widgets port.
import type { Versioned } from '../shared/store.ts'
import type { NewWidget, Widget } from './widgets.schema.ts'

export type WidgetRecord = Versioned<Widget>

export interface WidgetStore {
  getWidget (id: number): Promise<WidgetRecord | null>
  /** Writes widget.created at \`now\`, in the same transaction. */
  createWidget (input: NewWidget, now: number): Promise<WidgetRecord>
}
`

const SERVICE = `// The widget rules.
import { notFound } from '../errors.ts'
import type { Clock } from '../shared/clock.ts'
import type { NewWidget } from './widgets.schema.ts'
import type { WidgetRecord, WidgetStore } from './widgets.store.ts'

export interface WidgetService {
  get (id: number): Promise<WidgetRecord>
  create (input: NewWidget): Promise<WidgetRecord>
}

export function createWidgetService (widgets: WidgetStore, clock: Clock): WidgetService {
  return {
    async get (id) {
      const widget = await widgets.getWidget(id)
      if (widget === null) throw notFound(\`widget \${id}\`)
      return widget
    },
    async create (input) {
      return await widgets.createWidget(input, clock.now())
    }
  }
}
`

const VIEW = `// The public view of a widget, from its record.
import type { Widget } from './widgets.schema.ts'
import type { WidgetRecord } from './widgets.store.ts'

export const toPublicWidget = ({ version: _version, ...widget }: WidgetRecord): Widget => widget
`

const ROUTES = `// Widgets over HTTP: schema, one service call, status code.
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { etagOf } from '../routing/conditional.ts'
import { ETagHeader, LocationHeader, NoQuery, Reply } from '../shared/schemas.ts'
import { NewWidgetSchema, WidgetIdParams, WidgetSchema } from './widgets.schema.ts'
import type { WidgetService } from './widgets.service.ts'
import { toPublicWidget } from './widgets.view.ts'

export async function widgetRoutes (fastify: FastifyInstance, { widgets }: { widgets: WidgetService }): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const tags = ['Widgets']

  app.post('/widgets', {
    schema: {
      operationId: 'createWidget', tags, summary: 'Create a widget', description: 'Creates a widget.',
      querystring: NoQuery, body: NewWidgetSchema,
      response: { 201: Reply('The widget, as created.', WidgetSchema, { ...LocationHeader, ...ETagHeader }) }
    },
    config: { role: 'staff', scope: 'catalog:write', errors: ['validation_failed'] }
  }, async (request, reply) => {
    const widget = await widgets.create(request.body)
    reply.code(201).header('location', \`/v1/widgets/\${widget.id}\`).header('etag', etagOf(widget))
    return toPublicWidget(widget)
  })

  app.get('/widgets/:widgetId', {
    schema: {
      operationId: 'getWidget', tags, summary: 'Get a widget', description: 'The widget, with its ETag.',
      params: WidgetIdParams, querystring: NoQuery,
      response: { 200: Reply('The widget.', WidgetSchema, ETagHeader) }
    },
    config: { role: 'customer', scope: 'catalog:read', errors: ['validation_failed', 'not_found'] }
  }, async (request, reply) => {
    const widget = await widgets.get(request.params.widgetId)
    reply.header('etag', etagOf(widget))
    return toPublicWidget(widget)
  })
}
`

const FEATURE = `// The widgets feature as app.ts registers it: the service on its port, and its routes.
import type { Feature } from '../routing/feature.ts'
import type { Clock } from '../shared/clock.ts'
import { widgetRoutes } from './widgets.routes.ts'
import { createWidgetService } from './widgets.service.ts'
import type { WidgetStore } from './widgets.store.ts'

export function widgetsFeature (store: WidgetStore, shared: { clock: Clock }): Feature {
  const widgets = createWidgetService(store, shared.clock)
  return { routes: async (v1) => { await v1.register(widgetRoutes, { widgets }) } }
}
`

const SQLITE_STORE = `// WidgetStore on SQLite.
import type { WidgetStore } from '../../widgets/widgets.store.ts'
import { catalogEvent } from '../../events/events.store.ts'
import type { Db } from './database.ts'
import type { SqliteEventLog } from './events.ts'
import type { Writer } from './writer.ts'
import { WIDGET_COLUMNS, toWidget, type WidgetRow } from '../rows.ts'

export function createSqliteWidgetStore (db: Db, writer: Writer, events: SqliteEventLog): WidgetStore {
  const byId = db.prepare(\`SELECT \${WIDGET_COLUMNS} FROM widgets WHERE id = ?\`)
  const insert = db.prepare(\`INSERT INTO widgets (name) VALUES (?) RETURNING \${WIDGET_COLUMNS}\`)
  return {
    async getWidget (id) {
      const row = byId.get(id) as WidgetRow | undefined
      return row === undefined ? null : toWidget(row)
    },
    async createWidget (input, now) {
      return await writer.run(() => {
        const widget = toWidget(insert.get(input.name) as unknown as WidgetRow)
        events.append([catalogEvent('widget.created', widget)], now)
        return widget
      })
    }
  }
}
`

const POSTGRES_STORE = `// WidgetStore on PostgreSQL.
import type { WidgetStore } from '../../widgets/widgets.store.ts'
import { catalogEvent } from '../../events/events.store.ts'
import type { Db } from './database.ts'
import { appendEvents } from './events.ts'
import { WIDGET_COLUMNS, toWidget, type WidgetRow } from '../rows.ts'

export function createPostgresWidgetStore (db: Db): WidgetStore {
  return {
    async getWidget (id) {
      const row = await db.first<WidgetRow>(\`SELECT \${WIDGET_COLUMNS} FROM widgets WHERE id = $1\`, [id])
      return row === undefined ? null : toWidget(row)
    },
    async createWidget (input, now) {
      return db.transaction(async (tx) => {
        const row = await tx.first<WidgetRow>(\`INSERT INTO widgets (name) VALUES ($1) RETURNING \${WIDGET_COLUMNS}\`, [input.name])
        const widget = toWidget(row!)
        await appendEvents(tx, [catalogEvent('widget.created', widget)], now)
        return widget
      })
    }
  }
}
`

const HTTP_TEST = `// Widgets through HTTP on real storage (both engines): every answer goes through the response gate.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp } from '../helpers/app.ts'

test('widgets: POST 201 as staff, GET 200 as a customer, 404 unknown, 403 a customer creating; one event, one audit entry', async (t) => {
  const { call } = await buildTestApp(t)
  const created = await call({ method: 'POST', url: '/v1/widgets', role: 'staff', payload: { name: 'Sprocket' } })
  assert.equal(created.statusCode, 201, created.body)
  assert.deepEqual(created.json(), { id: 1, name: 'Sprocket' })
  assert.equal(created.headers.location, '/v1/widgets/1')
  const got = await call({ method: 'GET', url: '/v1/widgets/1', role: 'customer' })
  assert.equal(got.statusCode, 200, got.body)
  assert.deepEqual(got.json(), { id: 1, name: 'Sprocket' })
  assert.equal(got.headers.etag, '"1"')
  assert.equal((await call({ method: 'GET', url: '/v1/widgets/2', role: 'customer' })).statusCode, 404)
  assert.equal((await call({ method: 'POST', url: '/v1/widgets', role: 'customer', payload: { name: 'X' } })).statusCode, 403)
  assert.equal((await call({ method: 'POST', url: '/v1/widgets', role: 'staff', payload: { name: '' } })).statusCode, 400)

  const events = await call({ method: 'GET', url: '/v1/events?type=widget.created', role: 'staff' })
  assert.equal(events.statusCode, 200, events.body)
  assert.deepEqual(events.json().map((e: { type: string; data: unknown }) => [e.type, e.data]), [['widget.created', { id: 1, name: 'Sprocket' }]])
  const audit = await call({ method: 'GET', url: '/v1/admin/audit?action=widget.*', role: 'admin' })
  assert.equal(audit.statusCode, 200, audit.body)
  assert.deepEqual(audit.json().map((e: { action: string; target: unknown }) => [e.action, e.target]), [['widget.create', { type: 'widget', id: '1' }]])
})
`

/**
 * The edits, by the name the recipe gives each file (or command, under `run`). Files are written
 * relative to the copy's root.
 */
export const WIDGET_EDITS: Record<string, (root: string) => void> = {
  'src/<feature>/<feature>.schema.ts': (root) => { create(root, 'src/widgets/widgets.schema.ts', SCHEMA) },
  'src/<feature>/<feature>.store.ts': (root) => { create(root, 'src/widgets/widgets.store.ts', STORE) },
  'src/<feature>/<feature>.service.ts': (root) => { create(root, 'src/widgets/widgets.service.ts', SERVICE) },
  'src/<feature>/<feature>.view.ts': (root) => { create(root, 'src/widgets/widgets.view.ts', VIEW) },
  'src/<feature>/<feature>.routes.ts': (root) => { create(root, 'src/widgets/widgets.routes.ts', ROUTES) },
  'src/<feature>/<feature>.feature.ts': (root) => { create(root, 'src/widgets/widgets.feature.ts', FEATURE) },
  'src/events/catalogue.ts': (root) => {
    change(root, 'src/events/catalogue.ts', (text) => after(
      withImports(text, "import { WidgetSchema } from '../widgets/widgets.schema.ts'\nimport { toPublicWidget } from '../widgets/widgets.view.ts'"),
      'const ROWS = {\n',
      `  'widget.created': viewedEventRow({
    audience: 'catalog', data: WidgetSchema, view: toPublicWidget, example: { id: 1, name: 'Sprocket', version: 1 },
    audit: 'widget.create',
    description: 'A widget was made.'
  }),
`))
  },
  'eslint.config.js': (root) => {
    change(root, 'eslint.config.js', (text) => after(text, '\n  events: [', "'widgets', "))
  },
  'src/storage/rows.ts': (root) => {
    change(root, 'src/storage/rows.ts', (text) => withImports(text, "import type { WidgetRecord } from '../widgets/widgets.store.ts'")
      + `
export interface WidgetRow { id: number; name: string; version: number }
export const WIDGET_COLUMNS = 'id, name, version'
export const toWidget = (row: WidgetRow): WidgetRecord => ({ id: row.id, name: row.name, version: row.version })
`)
  },
  'src/storage/sqlite/<feature>.ts': (root) => { create(root, 'src/storage/sqlite/widgets.ts', SQLITE_STORE) },
  'src/storage/postgres/<feature>.ts': (root) => { create(root, 'src/storage/postgres/widgets.ts', POSTGRES_STORE) },
  'src/storage/sqlite/migrations.ts': (root) => {
    change(root, 'src/storage/sqlite/migrations.ts', (text) => appendMigration(text,
      '  CREATE TABLE widgets (\n    id      INTEGER PRIMARY KEY AUTOINCREMENT,\n    name    TEXT    NOT NULL,\n'
      + '    version INTEGER NOT NULL DEFAULT 1\n  );'))
  },
  'src/storage/postgres/migrations.ts': (root) => {
    change(root, 'src/storage/postgres/migrations.ts', (text) => appendMigration(text,
      '  CREATE TABLE widgets (\n    id      bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,\n    name    text    NOT NULL,\n'
      + '    version integer NOT NULL DEFAULT 1\n  );'))
  },
  'src/storage/stores.ts': (root) => {
    change(root, 'src/storage/stores.ts', (text) => after(
      withImports(text, [
        "import type { WidgetStore } from '../widgets/widgets.store.ts'",
        "import { createSqliteWidgetStore } from './sqlite/widgets.ts'",
        "import { createPostgresWidgetStore } from './postgres/widgets.ts'"
      ].join('\n')),
      'export const PORTS = {\n',
      `  widgets: port<WidgetStore>({
    sqlite: (c) => createSqliteWidgetStore(c.db, c.writer, c.eventLog),
    postgres: (c) => createPostgresWidgetStore(c.db)
  }),
`))
  },
  'src/app.ts': (root) => {
    change(root, 'src/app.ts', (text) => after(
      withImports(text, "import { widgetsFeature } from './widgets/widgets.feature.ts'"),
      'const features = {\n',
      '    widgets: widgetsFeature(stores.widgets, { clock }),\n'))
  },
  'src/openapi/openapi.ts': (root) => {
    change(root, 'src/openapi/openapi.ts', (text) => after(
      afterLine(text, "{ name: 'Categories', description:", "  { name: 'Widgets', description: 'Things to test a recipe with.' },\n"),
      "tags: ['Pet catalogue', 'Categories'", ", 'Widgets'"))
  },
  'test/<feature>/<feature>.http.test.ts': (root) => { create(root, 'test/widgets/widgets.http.test.ts', HTTP_TEST) },
  'test/access/scopes.http.test.ts': (root) => {
    change(root, 'test/access/scopes.http.test.ts', (text) => after(text, 'const SCOPE_OF: Record<string, string[]> = {\n',
      "  createWidget: ['catalog:write'], getWidget: ['catalog:read'],\n"))
  },
  'test/events/catalogue.test.ts': (root) => {
    change(root, 'test/events/catalogue.test.ts', (text) => after(
      text.replace(/eventTypes\(\)\.length, (\d+)\)/, (_, count: string) => `eventTypes().length, ${Number(count) + 1})`),
      'assert.deepEqual(audited, {\n', "    'widget.created': 'widget.create',\n"))
  },
  // The tools a catalog:read key lists: getWidget is one.
  'test/mcp/mcp-scopes.http.test.ts': (root) => {
    change(root, 'test/mcp/mcp-scopes.http.test.ts', (text) => after(text, "'getRateLimit', ", "'getWidget', "))
  }
}
