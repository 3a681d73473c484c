// petstore keys create|list|revoke|unban|rotate|usage|portal-link: key administration from the shell,
// through the same service as the admin API, straight to the database. No message reaches a
// running server; each sees the change within 5 s (docs/product.md 2.4) because it keeps a key for
// at most 2 s (access/key-cache.ts) and polls ban lifts every 2 s (access/ban-sync.ts).
// test/cli/effects.test.ts checks each command's effect on the database and on running servers.
import { parseArgs } from 'node:util'
import type { TSchema } from 'typebox'
import { loadConfig, type Config } from '../config.ts'
import { openStores } from '../infra.ts'
import { PLANS, type Plan, type Role } from '../accounts/plans.ts'
import type { Scope } from '../accounts/scopes.ts'
import type { Problem } from '../http/validation.ts'
import { NewApiKeySchema, type NewApiKey } from '../keys/keys.schema.ts'
import { createKeyAdmin, type KeyAdmin } from '../keys/keys.service.ts'
import { createPortal, type Portal } from '../portal/portal.service.ts'
import { toApiKey } from '../keys/keys.view.ts'
import { systemClock } from '../shared/clock.ts'
import { withActor } from '../shared/actor-context.ts'
import { cliActor } from './audit.ts'
import { databaseWaitNote, type Io } from './io.ts'
import { printable, printableJson } from './printable.ts'

export const KEYS_USAGE = `usage:
  petstore keys create --role customer|staff|admin --plan free|pro|business|enterprise [--name TEXT] [--per-minute N --per-day N] [--expires-in DURATION | --expires-at ISO] [--scopes SCOPE,SCOPE…] [--json]
  petstore keys list [--json]
  petstore keys revoke ID
  petstore keys unban ID
  petstore keys rotate ID [--grace DURATION] [--json]
  petstore keys usage ID [--days N] [--json]
  petstore keys portal-link ID [--base-url URL] [--json]
DURATION is a whole number and a unit: 90s, 15m, 12h, 30d.
SCOPE restricts the key (within its role): catalog:read, catalog:write, orders:read, orders:write, inventory:read, inventory:write, webhooks:manage, keys:admin.`

/** The subcommands this module runs; main.ts's command table lists the same (test/cli/usage.test.ts). */
export const KEY_SUBCOMMANDS = ['create', 'list', 'revoke', 'unban', 'rotate', 'usage', 'portal-link'] as const

export async function keys (args: string[], io: Io): Promise<number> {
  const [sub, ...rest] = args
  if (sub === undefined || !(KEY_SUBCOMMANDS as readonly string[]).includes(sub)) {
    io.err(KEYS_USAGE)
    return 2
  }
  const config = loadConfig(io.env)
  const stores = await openStores(config, { migrate: true, onWait: databaseWaitNote(io, 'keys') })
  try {
    const admin = createKeyAdmin(stores.keys, systemClock)
    // The audit log names the user who ran the command (cli/audit.ts).
    return await withActor(cliActor(io), async () => {
      if (sub === 'create') return await create(admin, rest, io)
      if (sub === 'list') return await list(admin, rest, io)
      if (sub === 'rotate') return await rotate(admin, rest, io)
      if (sub === 'usage') return await usage(admin, rest, io)
      if (sub === 'portal-link') return await portalLink(createPortal(stores.portal, stores.keys, systemClock), config, rest, io)
      return await byId(admin, sub as 'revoke' | 'unban', rest, io)
    })
  } finally {
    await stores.close()
  }
}

async function create (admin: KeyAdmin, args: string[], io: Io): Promise<number> {
  const { values } = parseArgs({
    args, strict: true,
    options: {
      role: { type: 'string' }, plan: { type: 'string' }, name: { type: 'string' }, 'per-minute': { type: 'string' }, 'per-day': { type: 'string' },
      'expires-in': { type: 'string' }, 'expires-at': { type: 'string' }, scopes: { type: 'string' }, json: { type: 'boolean', default: false }
    }
  })
  const perMinute = positiveInt(values['per-minute'], '--per-minute', io)
  const perDay = positiveInt(values['per-day'], '--per-day', io)
  if (perMinute === false || perDay === false) return 2
  if (values['expires-in'] !== undefined && values['expires-at'] !== undefined) {
    io.err('give --expires-in or --expires-at, not both')
    return 2
  }
  let expiresAt = values['expires-at']
  if (values['expires-in'] !== undefined) {
    const ms = durationMs(values['expires-in'], '--expires-in', io)
    if (ms === false) return 2
    const at = new Date(systemClock.now() + ms)
    if (Number.isNaN(at.getTime())) {
      io.err(`--expires-in ${values['expires-in']} ends after the last date a date-time can hold`)
      return 2
    }
    expiresAt = at.toISOString()
  }
  const input = {
    ...(values.name !== undefined && { name: values.name }),
    role: values.role as Role, plan: values.plan as Plan,
    ...(perMinute !== undefined && { perMinute }),
    ...(perDay !== undefined && { perDay }),
    ...(expiresAt !== undefined && { expiresAt }),
    // `--scopes catalog:read,orders:read`; the schema check below names an unknown one.
    ...(values.scopes !== undefined && { scopes: values.scopes.split(',').map((s) => s.trim()) as Scope[] })
  } satisfies NewApiKey
  if (!await fitsSchema(NewApiKeySchema, input, io)) return 2
  const { key, ...state } = await admin.create(input)
  const view = toApiKey(state)
  if (values.json) io.out(printableJson({ ...view, key }))
  else {
    io.out(`key ${view.id} (${view.role}, ${view.plan}: ${view.limits.perMinute}/min, ${view.limits.perDay}/day`
      + (view.expiresAt !== null ? `, expires ${view.expiresAt}` : '')
      + (view.scopes !== null ? `, scopes ${view.scopes.join(',')}` : '')
      + `)\n${key}\nShown once: only its hash is stored.`)
  }
  return 0
}

async function rotate (admin: KeyAdmin, args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({
    args, strict: true, allowPositionals: true,
    options: { grace: { type: 'string' }, json: { type: 'boolean', default: false } }
  })
  const id = oneId(positionals, io)
  if (id === false) return 2
  let gracePeriodSeconds: number | undefined
  if (values.grace !== undefined) {
    const ms = durationMs(values.grace, '--grace', io, true)
    if (ms === false) return 2
    gracePeriodSeconds = ms / 1000
  }
  const { key, old, ...state } = await admin.rotate(id, gracePeriodSeconds === undefined ? {} : { gracePeriodSeconds })
  const view = toApiKey(state)
  if (values.json) io.out(printableJson({ ...view, key }))
  else io.out(`key ${view.id} replaces key ${id}, which stops working at ${new Date(old.expiresAt!).toISOString()}\n${key}\nShown once: only its hash is stored.`)
  return 0
}

async function usage (admin: KeyAdmin, args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({
    args, strict: true, allowPositionals: true,
    options: { days: { type: 'string' }, json: { type: 'boolean', default: false } }
  })
  const id = oneId(positionals, io)
  if (id === false) return 2
  const days = positiveInt(values.days, '--days', io)
  if (days === false) return 2
  const report = await admin.usage(id, days === undefined ? {} : { days })
  if (values.json) {
    io.out(JSON.stringify(report))
    return 0
  }
  if (report.days.length === 0) io.out(`key ${id}: no requests in the period`)
  else {
    io.out(`${'date (UTC)'.padEnd(10)}  ${'allowed'.padStart(9)}  ${'limited'.padStart(9)}  ${'banned'.padStart(9)}`)
    for (const d of report.days) {
      io.out(`${d.date}  ${String(d.allowed).padStart(9)}  ${String(d.limited).padStart(9)}  ${String(d.banned).padStart(9)}`)
    }
  }
  return 0
}

/**
 * A one-time link to the partner portal for key ID, as POST /v1/admin/keys/{keyId}/portal makes
 * it. The CLI has no request to take the server's address from: --base-url names it (the address
 * the key holder reaches the API at, e.g. https://api.shop.example), else this machine's
 * HOST and PORT.
 */
async function portalLink (portal: Portal, config: Config, args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({
    args, strict: true, allowPositionals: true,
    options: { 'base-url': { type: 'string' }, json: { type: 'boolean', default: false } }
  })
  const id = oneId(positionals, io)
  if (id === false) return 2
  const given = values['base-url']
  let origin: string
  if (given === undefined) {
    const host = config.host.includes(':') ? `[${config.host}]` : config.host
    origin = `http://${host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host}:${config.port}`
    // A partner opens the link on its own machine: this one's address reaches it only when the
    // two are the same, so the operator is told where the link points and how to change it.
    io.err(`The link points at this machine's HOST and PORT (${origin}); give --base-url with the address the key holder reaches the API at.`)
  } else {
    const url = URL.canParse(given) ? new URL(given) : null
    if (url === null || !['https:', 'http:'].includes(url.protocol) || url.username !== '' || url.password !== '') {
      io.err(`--base-url must be an http(s) URL such as https://api.shop.example, got "${given}"`)
      return 2
    }
    // The portal is at the server's root: a path given with the URL (…/v1) is not part of it.
    origin = url.origin
  }
  const link = await portal.makeLink(id, origin)
  if (values.json) io.out(JSON.stringify(link))
  else io.out(`${link.url}\nOpens the partner portal as key ${id}, once, until ${link.expiresAt}.`)
  return 0
}

/** The option each field of the API's body comes from. */
const FLAGS: Record<string, string> = {
  name: '--name', role: '--role', plan: '--plan', perMinute: '--per-minute', perDay: '--per-day', expiresAt: '--expires-at', scopes: '--scopes'
}

/**
 * The API's own schema check of what the command is about to store (http/validation.ts: the
 * same Ajv and schema as the request's 400), so the CLI stores nothing the API would refuse; the
 * first problem is told as one line, in the command's words.
 */
async function fitsSchema (schema: TSchema, value: Record<string, unknown>, io: Io): Promise<boolean> {
  const { bodyCheck } = await import('../http/validation.ts')
  const problem = bodyCheck(schema)(value)[0]
  if (problem === undefined) return true
  io.err(describeProblem(problem, value))
  return false
}

function describeProblem (problem: Problem, value: Record<string, unknown>): string {
  const flag = problem.field === null ? 'the arguments' : FLAGS[problem.field] ?? problem.field
  if (problem.keyword === 'additionalProperties') return `${flag} is not accepted with --plan ${String(value.plan)}`
  if (problem.keyword === 'required') return `${flag} is required${problem.field === 'role' || problem.field === 'plan' ? '' : ` with --plan ${String(value.plan)}`}`
  // The plan picks the schema's branch: an unknown one is told with every plan.
  if (problem.field === 'plan') return `--plan must be one of ${PLANS.join(', ')}`
  if (problem.allowed !== undefined) return `${flag} must be one of ${problem.allowed.join(', ')}`
  return `${flag} ${problem.message}`
}

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/** "90s", "15m", "12h", "30d" in milliseconds; 0 only where `zero` allows it. */
function durationMs (text: string, name: string, io: Io, zero = false): number | false {
  const match = /^(0|[1-9][0-9]{0,8})([smhd])$/.exec(text)
  const ms = match === null ? NaN : Number(match[1]) * UNIT_MS[match[2]!]!
  if (Number.isNaN(ms) || (ms === 0 && !zero)) {
    io.err(`${name} must be a duration such as 90s, 15m, 12h or 30d, got "${text}"`)
    return false
  }
  return ms
}

function oneId (positionals: string[], io: Io): number | false {
  if (positionals.length !== 1) {
    io.err(KEYS_USAGE)
    return false
  }
  const id = positiveInt(positionals[0], 'ID', io)
  return id === undefined ? false : id
}

async function list (admin: KeyAdmin, args: string[], io: Io): Promise<number> {
  const { values } = parseArgs({ args, strict: true, options: { json: { type: 'boolean', default: false } } })
  let cursor: string | undefined
  do {
    const page = await admin.list({ limit: 100, ...(cursor !== undefined && { cursor }) })
    for (const key of page.items.map(toApiKey)) {
      if (values.json) io.out(printableJson(key))
      // A legacy key's prefix is shorter (accounts/keys.rules.ts DISPLAY_PREFIX_LENGTH): padded, so
      // the columns line up.
      else {
        io.out(`${String(key.id).padStart(5)}  ${(key.prefix + '…').padEnd(17)}  ${key.role.padEnd(8)} `
          + `${key.plan.padEnd(10)} ${key.limits.perMinute}/min ${key.limits.perDay}/day`
          + (key.format === 'legacy' ? '  legacy format (no checksum): rotate it' : '')
          + (key.revokedAt !== null ? '  revoked ' + key.revokedAt : '')
          + (key.expiresAt !== null ? '  expires ' + key.expiresAt : '')
          + (key.replacedBy !== null ? '  replaced by ' + key.replacedBy : '')
          + (key.ban !== null ? '  banned until ' + key.ban.until : '')
          + (key.scopes !== null ? '  scopes ' + key.scopes.join(',') : '')
          + (key.name !== null ? '  ' + printable(key.name) : ''))
      }
    }
    cursor = page.nextCursor ?? undefined
  } while (cursor !== undefined)
  return 0
}

async function byId (admin: KeyAdmin, sub: 'revoke' | 'unban', args: string[], io: Io): Promise<number> {
  const { positionals } = parseArgs({ args, strict: true, allowPositionals: true, options: {} })
  const id = positionals.length === 1 ? positiveInt(positionals[0], 'ID', io) : false
  if (id === false || id === undefined) {
    if (positionals.length !== 1) io.err(KEYS_USAGE)
    return 2
  }
  if (sub === 'revoke') {
    await admin.revoke(id, null)
    io.out(`key ${id} revoked`)
  } else {
    const lifted = await admin.unban(id)
    io.out(lifted > 0 ? `key ${id}: ban lifted` : `key ${id} was not banned`)
  }
  return 0
}

function positiveInt (text: string | undefined, name: string, io: Io): number | undefined | false {
  if (text === undefined) return undefined
  if (!/^[1-9][0-9]{0,9}$/.test(text)) {
    io.err(`${name} must be a positive integer, got "${text}"`)
    return false
  }
  return Number(text)
}
