// petstore audit verify: walks the audit log's hash chain in the configured database and exits 0
// when it is whole, or 1 naming the first entry changed, removed or inserted (docs/operating.md,
// "The audit log"). Also the actor of `petstore keys …` in the log: the operating system user.
import { existsSync } from 'node:fs'
import { userInfo } from 'node:os'
import { parseArgs } from 'node:util'
import { createAuditService } from '../audit/audit.service.ts'
import type { AuditHead } from '../audit/audit.store.ts'
import { describeDatabase, loadConfig } from '../config.ts'
import { openStores } from '../infra.ts'
import type { ActorContext } from '../shared/actor-context.ts'
import { databaseWaitNote, type Io } from './io.ts'

export const AUDIT_USAGE = `usage:
  petstore audit verify [--known COUNT:HASH] [--json]
Walks the audit log's hash chain: exit 0 when every entry is intact, 1 naming the first entry
changed, removed or inserted, 2 when DATABASE_URL names no database. The chain alone cannot show
a log cut at its end or wiped, with its head rewritten to match: --known checks a head kept
earlier (GET /v1/admin/audit/head).`

export const AUDIT_SUBCOMMANDS = ['verify'] as const

/**
 * What an intact chain does not prove (docs/operating.md, "The audit log"): whoever can write to
 * the database can cut the log's end, or empty it, and set its head to match; only a head kept
 * elsewhere shows it.
 */
const UNSEEN_WITHOUT_KNOWN = 'the chain alone cannot show a log cut at its end or wiped with its head rewritten to match: check a head kept elsewhere with --known COUNT:HASH'

/** The audit actor of a command run from a shell: the user running it. */
export function cliActor (io: Io): ActorContext {
  let user: string
  try {
    user = userInfo().username
  } catch {
    // No entry for this uid in the passwd database (a container's arbitrary uid).
    user = io.env.USER ?? io.env.LOGNAME ?? 'unknown'
  }
  return { actor: { type: 'cli', user }, requestId: null, address: null }
}

export async function audit (args: string[], io: Io): Promise<number> {
  const [sub, ...rest] = args
  if (sub !== 'verify') {
    io.err(AUDIT_USAGE)
    return 2
  }
  const { values } = parseArgs({
    args: rest, strict: true,
    options: { known: { type: 'string' }, json: { type: 'boolean', default: false } }
  })
  let known: AuditHead | undefined
  if (values.known !== undefined) {
    const match = /^(0|[1-9][0-9]{0,15}):([0-9a-f]{64})?$/.exec(values.known)
    if (match === null) {
      io.err('--known takes COUNT:HASH, as GET /v1/admin/audit/head answers them')
      return 2
    }
    known = { count: Number(match[1]), hash: match[2] ?? '' }
  }
  const config = loadConfig(io.env)
  // Opening a SQLite path that holds no file would create an empty database, whose empty log is
  // "intact": a mistyped DATABASE_URL must not pass for a verified log.
  const { database } = config
  if (database.kind === 'sqlite' && (database.path === ':memory:' || !existsSync(database.path))) {
    io.err(`petstore audit verify: no database at ${describeDatabase(database)}: nothing verified (DATABASE_URL must name the server's database)`)
    return 2
  }
  const stores = await openStores(config, { migrate: true, onWait: databaseWaitNote(io, 'audit') })
  try {
    const { head, checked, fault } = await createAuditService(stores.audit).verify(known)
    if (values.json) {
      io.out(JSON.stringify({
        ok: fault === null,
        count: head.count,
        hash: head.hash,
        checked,
        ...(fault !== null && { fault })
      }))
    } else if (fault === null) {
      const last = head.hash === '' ? '(none)' : head.hash
      const unseen = known === undefined
        ? UNSEEN_WITHOUT_KNOWN
        : `it holds the head kept (entry ${known.count}); a cut after that entry shows only against a later head`
      io.out(`audit log intact: ${head.count} entries, last hash ${last}; ${unseen}`)
    } else {
      io.out(`audit log broken at entry ${fault.entry} (${fault.problem}): ${fault.message}`)
    }
    return fault === null ? 0 : 1
  } finally {
    await stores.close()
  }
}
