// petstore keys create|list|revoke|unban: key administration from the shell, through the same
// service as the admin API. Running servers see the change within seconds (see ban-sync.ts and
// the key cache in http/access.ts).
import { parseArgs } from 'node:util'
import { loadConfig } from '../config.ts'
import { openStores } from '../infra.ts'
import { PLANS, ROLES, type Plan, type Role } from '../keys/keys.schema.ts'
import { createKeyAdmin, type KeyAdmin } from '../keys/keys.service.ts'
import { systemClock } from '../shared/clock.ts'
import type { Io } from './io.ts'

const USAGE = `usage:
  petstore keys create --role customer|staff|admin --plan free|pro|business|enterprise [--name TEXT] [--per-minute N --per-day N] [--json]
  petstore keys list [--json]
  petstore keys revoke ID
  petstore keys unban ID`

export async function keys (args: string[], io: Io): Promise<number> {
  const [sub, ...rest] = args
  if (sub === undefined || !['create', 'list', 'revoke', 'unban'].includes(sub)) {
    io.err(USAGE)
    return 2
  }
  const config = loadConfig(io.env)
  const stores = await openStores(config, { migrate: true })
  try {
    const admin = createKeyAdmin(stores.keys, systemClock)
    if (sub === 'create') return await create(admin, rest, io)
    if (sub === 'list') return await list(admin, rest, io)
    return await byId(admin, sub as 'revoke' | 'unban', rest, io)
  } finally {
    await stores.close()
  }
}

async function create (admin: KeyAdmin, args: string[], io: Io): Promise<number> {
  const { values } = parseArgs({
    args, strict: true,
    options: { role: { type: 'string' }, plan: { type: 'string' }, name: { type: 'string' }, 'per-minute': { type: 'string' }, 'per-day': { type: 'string' }, json: { type: 'boolean', default: false } }
  })
  if (!ROLES.includes(values.role as Role) || !PLANS.includes(values.plan as Plan)) {
    io.err(`--role must be one of ${ROLES.join(', ')} and --plan one of ${PLANS.join(', ')}`)
    return 2
  }
  const perMinute = positiveInt(values['per-minute'], '--per-minute', io)
  const perDay = positiveInt(values['per-day'], '--per-day', io)
  if (perMinute === false || perDay === false) return 2
  const { key, view } = await admin.create({
    role: values.role as Role, plan: values.plan as Plan,
    ...(values.name !== undefined && { name: values.name }),
    ...(perMinute !== undefined && { perMinute }),
    ...(perDay !== undefined && { perDay })
  })
  if (values.json) io.out(JSON.stringify({ ...view, key }))
  else io.out(`key ${view.id} (${view.role}, ${view.plan}: ${view.limits.perMinute}/min, ${view.limits.perDay}/day)\n${key}\nShown once: only its hash is stored.`)
  return 0
}

async function list (admin: KeyAdmin, args: string[], io: Io): Promise<number> {
  const { values } = parseArgs({ args, strict: true, options: { json: { type: 'boolean', default: false } } })
  let cursor: string | undefined
  do {
    const page = await admin.list({ limit: 100, ...(cursor !== undefined && { cursor }) })
    for (const key of page.items) {
      if (values.json) io.out(JSON.stringify(key))
      else io.out(`${String(key.id).padStart(5)}  ${key.prefix}…  ${key.role.padEnd(8)} ${key.plan.padEnd(10)} ${key.limits.perMinute}/min ${key.limits.perDay}/day${key.revokedAt !== null ? '  revoked ' + key.revokedAt : ''}${key.ban !== null ? '  banned until ' + key.ban.until : ''}${key.name !== null ? '  ' + key.name : ''}`)
    }
    cursor = page.nextCursor ?? undefined
  } while (cursor !== undefined)
  return 0
}

async function byId (admin: KeyAdmin, sub: 'revoke' | 'unban', args: string[], io: Io): Promise<number> {
  const { positionals } = parseArgs({ args, strict: true, allowPositionals: true, options: {} })
  const id = positionals.length === 1 ? positiveInt(positionals[0], 'ID', io) : false
  if (id === false || id === undefined) {
    if (positionals.length !== 1) io.err(USAGE)
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

