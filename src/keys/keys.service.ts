// API keys: making them, checking them, and administering them.
import { AppError, notFound } from '../errors.ts'
import type { Clock } from '../shared/clock.ts'
import type { DeprecatedOperation } from '../shared/deprecation.ts'
import { pageRequest, toPage, type Page } from '../shared/pagination.ts'
import { isStorableId } from '../shared/schemas.ts'
import type { IfMatch } from '../shared/store.ts'
import { DAY_MS, type Decision, type Quota } from '../ratelimit/limiter.ts'
import { DISPLAY_PREFIX_LENGTH, hashKey, isExpired, keyFormatOf, newKeySecret, quotaOf, subjectOf, utcDay } from '../accounts/keys.rules.ts'
import type { Plan, Role } from '../accounts/plans.ts'
import { canonicalScopes, roleAllows, SCOPES, type Scope } from '../accounts/scopes.ts'
import {
  BAN_HISTORY_MAX,
  DEPRECATION_DAYS,
  GRACE_PERIOD_DEFAULT_S,
  GRACE_PERIOD_MAX_S,
  USAGE_DAYS_DEFAULT,
  USAGE_DAYS_MAX,
  type ApiKeyPatch,
  type Deprecations,
  type KeyBans,
  type KeyRateLimit,
  type KeyUsage,
  type NewApiKey,
  type RotateApiKey
} from './keys.schema.ts'
import type { KeyStatus } from '../accounts/keys.status.ts'
import type { BanRecord, KeyRecord, KeyStore } from '../accounts/keys.store.ts'
import type { ChargeReport } from '../access/reported-keys.ts'
import { toKeyUsage } from './keys.view.ts'

/**
 * Keys are 43 random base62 characters (over 256 bits) behind a readable prefix and before a
 * checksum (accounts/keys.rules.ts: the format). They are stored as SHA-256 hashes: a key has far
 * too much entropy to brute-force, so a slow password hash would only slow every request down;
 * the lookup by hash also keeps comparisons off the key itself.
 */
export function generateKey (): { key: string; hash: string; prefix: string } {
  const key = newKeySecret()
  return { key, hash: hashKey(key), prefix: key.slice(0, DISPLAY_PREFIX_LENGTH.checksummed) }
}

/**
 * What the admin service answers about a key: its record, its ban in force and when it was last
 * used (the later of the stored instant and this instance's uses not yet flushed). The routes and
 * the CLI turn it into the public view (keys.view.ts).
 */
export interface KeyState {
  record: KeyRecord
  ban: BanRecord | null
  lastUsedAt: number | null
}

/** `expiresAt` of a new key: a date-time strictly in the future. */
function parseExpiry (text: string | undefined, now: number): number | null {
  if (text === undefined) return null
  const at = Date.parse(text)
  if (Number.isNaN(at)) {
    throw new AppError('validation_failed', 'expiresAt must be an ISO 8601 date-time', { details: [{ path: '/expiresAt', message: 'must be a date-time' }] })
  }
  if (at <= now) {
    throw new AppError('validation_failed', `expiresAt must be in the future (it is ${new Date(at).toISOString()}, now is ${new Date(now).toISOString()})`, { details: [{ path: '/expiresAt', message: 'must be in the future' }] })
  }
  return at
}

/** The CLI reaches the service without the HTTP schema, so the bounds are checked here too. */
function checkWhole (value: number, min: number, max: number, path: string): void {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new AppError('validation_failed', `${path.slice(1)} must be a whole number from ${min} to ${max}`, { details: [{ path, message: `must be from ${min} to ${max}` }] })
  }
}

/** Enterprise keys carry both quotas; the other plans take their plan's and refuse custom ones. */
function checkQuotas (plan: Plan, perMinute: number | undefined | null, perDay: number | undefined | null): void {
  const given = (perMinute ?? null) !== null || (perDay ?? null) !== null
  if (plan === 'enterprise' && ((perMinute ?? null) === null || (perDay ?? null) === null)) {
    throw new AppError('validation_failed', 'an enterprise key needs both perMinute and perDay', { details: [{ path: '/perMinute', message: 'required for the enterprise plan' }] })
  }
  if (plan !== 'enterprise' && given) {
    throw new AppError('validation_failed', `the ${plan} plan has fixed quotas; perMinute and perDay are for enterprise keys only`, { details: [{ path: '/perMinute', message: 'only for the enterprise plan' }] })
  }
  if (perMinute != null && perDay != null && perMinute > perDay) {
    throw new AppError('validation_failed', 'perMinute cannot exceed perDay', { details: [{ path: '/perMinute', message: 'exceeds perDay' }] })
  }
}

/**
 * A restricted key's scopes: known ones (the CLI reaches the service without the HTTP schema),
 * at least one, each within the key's role (a scope only narrows a role). Canonical order.
 */
function checkScopes (role: Role, scopes: readonly string[] | undefined): Scope[] | null {
  if (scopes === undefined) return null
  if (scopes.length === 0) {
    throw new AppError('validation_failed', 'scopes, when given, must name at least one scope', { details: [{ path: '/scopes', message: 'must not be empty' }] })
  }
  for (const [i, scope] of scopes.entries()) {
    if (!(SCOPES as readonly string[]).includes(scope)) {
      throw new AppError('validation_failed', `unknown scope "${scope}": the scopes are ${SCOPES.join(', ')}`, { details: [{ path: `/scopes/${i}`, message: 'unknown scope' }] })
    }
    if (!roleAllows(role, scope as Scope)) {
      throw new AppError('validation_failed', `the ${scope} scope is outside the ${role} role: a scope can only narrow a role`, { details: [{ path: `/scopes/${i}`, message: `outside the ${role} role` }] })
    }
  }
  return canonicalScopes(scopes as Scope[])
}

export interface KeyAdmin {
  /** The new key's state, and the key itself (shown once). */
  create (input: NewApiKey): Promise<KeyState & { key: string }>
  /**
   * Makes the successor of a live key (same name, role, plan, quotas, scopes and quota identity); the
   * old key keeps working for the grace period, then expires.
   */
  rotate (id: number, input: RotateApiKey): Promise<KeyState & { key: string; old: KeyRecord }>
  /** Requests per UTC day over the last `days` days (today included), days with traffic only. */
  usage (id: number, query: { days?: number }): Promise<KeyUsage>
  /** Filters: docs/product.md section 10 (accounts/keys.status.ts for the statuses). */
  list (
    query: { limit?: number; cursor?: string; status?: KeyStatus; role?: Role; plan?: Plan; q?: string }
  ): Promise<Page<KeyState>>
  /** The key's minute and day windows and ban, read from the limiter without charging anything. */
  rateLimit (id: number): Promise<KeyRateLimit>
  /** The bans of the key's rotation chain, latest first. */
  bans (id: number): Promise<KeyBans>
  /** Each deprecated operation, and the keys that called it over the last 30 UTC days. */
  deprecations (): Promise<Deprecations>
  get (id: number): Promise<KeyState>
  update (id: number, patch: ApiKeyPatch, ifMatch: IfMatch): Promise<KeyState>
  revoke (id: number, ifMatch: IfMatch): Promise<void>
  /** Lifts the key's ban in the database; returns how many bans were lifted. */
  unban (id: number): Promise<number>
  /**
   * Revokes every valid key among `presented` (found exposed), with the live keys of its rotation
   * chain; the reporter needs no key, and is charged per key sent (hooks.chargeReport), before any
   * key is read. Answers nothing: the caller must learn nothing about any key.
   */
  reportLeaked (presented: readonly string[], reporter: { address: string }): Promise<void>
}

export interface KeyAdminHooks {
  /** A ban was lifted in the database: drop it from this instance's limiter at once. */
  onUnban?: (keyId: number, subject: string) => Promise<void>
  /**
   * A key changed through this service (role, plan, revocation, rotation): forget what every
   * instance cached about it.
   */
  onKeyChanged?: (record: KeyRecord) => void
  /** This instance's usage not yet flushed (access/usage.ts): written before usage is read. */
  usage?: { flush (): Promise<void>; lastUsedAt (keyId: number): number | null }
  /** The limiter's answer for a subject, changing nothing (RateLimiter.peek); rateLimit needs it. */
  peek?: (subject: string, quota: Quota) => Decision | Promise<Decision>
  /** The deprecated operations the app serves (known once its routes are declared). */
  deprecatedOperations?: () => readonly DeprecatedOperation[]
  /**
   * Charges a leaked-key report's keys to the reporter's address (access/reported-keys.ts), or
   * throws its 429; uncharged when absent.
   */
  chargeReport?: ChargeReport
}

const isoOf = (ms: number): string => new Date(ms).toISOString()

export function createKeyAdmin (keys: KeyStore, clock: Clock, hooks: KeyAdminHooks = {}): KeyAdmin {
  async function find (id: number): Promise<KeyRecord> {
    const record = isStorableId(id) ? await keys.getKey(id) : null
    if (record === null) throw notFound(`key ${id}`)
    return record
  }
  const lastUsedAt = (record: KeyRecord): number | null => {
    const pending = hooks.usage?.lastUsedAt(record.id) ?? null
    return pending !== null && (record.lastUsedAt === null || pending > record.lastUsedAt) ? pending : record.lastUsedAt
  }
  const stateOf = async (record: KeyRecord): Promise<KeyState> => ({
    record,
    ban: await keys.activeBan(record.id, clock.now()),
    lastUsedAt: lastUsedAt(record)
  })

  return {
    async create (input) {
      checkQuotas(input.plan, input.perMinute, input.perDay)
      const scopes = checkScopes(input.role, input.scopes)
      const now = clock.now()
      const expiresAt = parseExpiry(input.expiresAt, now)
      const { key, hash, prefix } = generateKey()
      const record = await keys.createKey({
        name: input.name ?? null, role: input.role, plan: input.plan,
        perMinute: input.perMinute ?? null, perDay: input.perDay ?? null, hash, prefix, now, expiresAt, scopes
      })
      return { record, ban: null, lastUsedAt: null, key }
    },
    async rotate (id, input) {
      const grace = input.gracePeriodSeconds ?? GRACE_PERIOD_DEFAULT_S
      checkWhole(grace, 0, GRACE_PERIOD_MAX_S, '/gracePeriodSeconds')
      if (!isStorableId(id)) throw notFound(`key ${id}`)
      const now = clock.now()
      const { key, hash, prefix } = generateKey()
      const { old, created } = await keys.rotateKey(id, { hash, prefix, now, graceEndsAt: now + grace * 1000 })
      hooks.onKeyChanged?.(old)
      // The successor shares the old key's quota identity, and so its ban, if any.
      return { ...await stateOf(created), key, old }
    },
    async usage (id, query) {
      const days = query.days ?? USAGE_DAYS_DEFAULT
      checkWhole(days, 1, USAGE_DAYS_MAX, '/days')
      await find(id)
      // This instance's counts first, so the answer includes every request it has answered.
      await hooks.usage?.flush()
      const fromDay = utcDay(clock.now() - (days - 1) * DAY_MS)
      const rows = await keys.usage(id, fromDay)
      const calls = await keys.deprecatedCalls(fromDay, id)
      return toKeyUsage(id, rows, calls, hooks.deprecatedOperations?.() ?? [])
    },
    async list (query) {
      const page = pageRequest(query)
      const { status, role, plan, q } = query
      const filtered = status !== undefined || role !== undefined || plan !== undefined || q !== undefined
      const rows = filtered
        ? await keys.listKeys(page, {
            now: clock.now(),
            ...(status !== undefined && { status }),
            ...(role !== undefined && { role }),
            ...(plan !== undefined && { plan }),
            ...(q !== undefined && { q })
          })
        : await keys.listKeys(page)
      const result = toPage(rows, page)
      return { items: await Promise.all(result.items.map(stateOf)), nextCursor: result.nextCursor }
    },
    async get (id) {
      return stateOf(await find(id))
    },
    async rateLimit (id) {
      const record = await find(id)
      const subject = subjectOf(record)
      if (hooks.peek === undefined) throw new Error('rateLimit needs the limiter (hooks.peek)')
      const decision = await hooks.peek(subject, quotaOf(record))
      const window = (w: Decision['minute']) => ({
        limit: w.limit,
        used: w.limit - w.remaining,
        remaining: w.remaining,
        reset: Math.ceil(w.resetAt / 1000)
      })
      return {
        keyId: record.id,
        subject,
        windows: { minute: window(decision.minute), day: window(decision.day) },
        ban: decision.ban === null ? null : { until: isoOf(decision.ban.until), reason: decision.ban.reason }
      }
    },
    async bans (id) {
      await find(id)
      const rows = await keys.banHistory(id, BAN_HISTORY_MAX)
      return {
        keyId: id,
        bans: rows.map((b) => ({
          keyId: b.keyId,
          startedAt: isoOf(b.startedAt),
          until: isoOf(b.endsAt),
          liftedAt: b.liftedAt === null ? null : isoOf(b.liftedAt),
          reason: b.reason
        }))
      }
    },
    async deprecations () {
      // This instance's calls first, as for usage.
      await hooks.usage?.flush()
      const from = utcDay(clock.now() - (DEPRECATION_DAYS - 1) * DAY_MS)
      const rows = await keys.deprecatedCalls(from)
      const names = new Map<number, KeyRecord | null>()
      for (const row of rows) if (!names.has(row.keyId)) names.set(row.keyId, await keys.getKey(row.keyId))
      const operations = (hooks.deprecatedOperations?.() ?? []).map((op) => {
        const byKey = new Map<number, Deprecations['operations'][number]['keys'][number] & { last: number }>()
        for (const row of rows) {
          if (row.operation !== op.operationId) continue
          let entry = byKey.get(row.keyId)
          if (entry === undefined) {
            const record = names.get(row.keyId) ?? null
            entry = {
              keyId: row.keyId,
              name: record?.name ?? null,
              prefix: record?.prefix ?? null,
              calls: 0,
              lastCallAt: '',
              days: [],
              last: 0
            }
            byKey.set(row.keyId, entry)
          }
          entry.calls += row.calls
          entry.days.push({ date: row.day, calls: row.calls })
          if (row.lastCallAt > entry.last) entry.last = row.lastCallAt
        }
        const lifecycle = op
        return {
          operationId: op.operationId,
          method: op.method,
          path: op.path,
          deprecatedAt: isoOf(lifecycle.deprecatedAt.getTime()),
          sunsetAt: lifecycle.sunsetAt === undefined ? null : isoOf(lifecycle.sunsetAt.getTime()),
          successor: lifecycle.successor === undefined ? null : { ...lifecycle.successor },
          keys: [...byKey.values()]
            .sort((a, b) => b.last - a.last || a.keyId - b.keyId)
            .map(({ last, ...entry }) => ({ ...entry, lastCallAt: isoOf(last) }))
        }
      })
      return { from, operations }
    },
    async update (id, patch, ifMatch) {
      const current = await find(id)
      const plan = patch.plan ?? current.plan
      // Leaving enterprise drops the custom quotas; staying or arriving keeps or takes the new ones.
      const perMinute = plan === 'enterprise' ? (patch.perMinute ?? current.perMinute) : (patch.perMinute ?? null)
      const perDay = plan === 'enterprise' ? (patch.perDay ?? current.perDay) : (patch.perDay ?? null)
      checkQuotas(plan, perMinute, perDay)
      // A lower role must not leave the key holding a scope outside it (the view would promise it).
      if (patch.role !== undefined && current.scopes !== null) {
        const outside = current.scopes.filter((s) => !roleAllows(patch.role!, s))
        if (outside.length > 0) {
          throw new AppError('validation_failed', `the key is restricted to ${outside.join(', ')}, outside the ${patch.role} role; make a new key instead`, { details: [{ path: '/role', message: 'the key holds scopes outside this role' }] })
        }
      }
      const record = await keys.updateKey(id, {
        ...(patch.name !== undefined && { name: patch.name }),
        ...(patch.role !== undefined && { role: patch.role }),
        plan, perMinute, perDay
      }, ifMatch, clock.now())
      hooks.onKeyChanged?.(record)
      return stateOf(record)
    },
    async revoke (id, ifMatch) {
      if (!isStorableId(id)) throw notFound(`key ${id}`)
      // Compute first, then call: `f?.(await g())` skips g() entirely when f is undefined, and the
      // CLI passes no hooks (issue 18).
      const revoked = await keys.revokeKey(id, clock.now(), ifMatch, 'requested')
      hooks.onKeyChanged?.(revoked)
    },
    async reportLeaked (presented, reporter) {
      // Every key sent is charged, whatever it is, before anything is read: a report that does not
      // fit is refused whole, and the charge says nothing about the keys.
      await hooks.chargeReport?.(reporter.address, presented.length)
      const now = clock.now()
      // The same work for every key sent, garbage included: its format check and its hash, so
      // the time of the answer says little about what was sent. The keys of a valid format (a
      // checksummed one with its right checksum, or a legacy one) are looked up in one query.
      const hashes = new Set<string>()
      for (const key of presented) {
        const hash = hashKey(key)
        if (keyFormatOf(key) !== null) hashes.add(hash)
      }
      const records = hashes.size === 0 ? [] : await keys.findKeysByHashes([...hashes])
      // A revocation takes the live keys of the rotation chain with it: one per chain.
      const chains = new Set<number>()
      for (const record of records) {
        // An expired or revoked key opens nothing any more; its successor has a secret of its own.
        if (record.revokedAt !== null || isExpired(record, now) || chains.has(record.quotaKeyId)) continue
        chains.add(record.quotaKeyId)
        const revoked = await keys.revokeKey(record.id, now, null, 'leaked')
        hooks.onKeyChanged?.(revoked)
        // The audit entries are written with the key.revoked events (storage's event append: one
        // per key, the rotation partner's too, each with its reason), the actor the request's
        // (docs/product.md 14.2).
      }
    },
    async unban (id) {
      const record = await find(id)
      const lifted = await keys.liftBans(id, clock.now())
      const subject = subjectOf(record)
      await hooks.onUnban?.(id, subject)
      return lifted
    }
  }
}
