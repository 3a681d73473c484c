// API keys: making them, checking them, and administering them.
import { createHash, randomBytes } from 'node:crypto'
import { AppError, notFound } from '../errors.ts'
import type { Clock } from '../shared/clock.ts'
import { isStorableId, pageRequest, toPage, type Page } from '../shared/pagination.ts'
import type { IfMatch } from '../shared/store.ts'
import { PLAN_QUOTAS, type ApiKey, type ApiKeyPatch, type NewApiKey, type Plan } from './keys.schema.ts'
import type { BanRecord, KeyRecord, KeyStore } from './keys.store.ts'

/**
 * Keys are 32 random bytes (256 bits) behind a readable prefix. They are stored as SHA-256
 * hashes: a key has far too much entropy to brute-force, so a slow password hash would only
 * slow every request down; the lookup by hash also keeps comparisons off the key itself.
 */
export function generateKey (): { key: string; hash: string; prefix: string } {
  const key = `psk_${randomBytes(32).toString('base64url')}`
  return { key, hash: hashKey(key), prefix: key.slice(0, 12) }
}

export const hashKey = (key: string): string => createHash('sha256').update(key).digest('hex')

export function quotaOf (key: Pick<KeyRecord, 'plan' | 'perMinute' | 'perDay'>): { perMinute: number; perDay: number } {
  if (key.plan === 'enterprise') return { perMinute: key.perMinute ?? 1, perDay: key.perDay ?? 1 }
  return PLAN_QUOTAS[key.plan]
}

export const subjectOfKey = (keyId: number): string => `key:${keyId}`

export function toApiKey (record: KeyRecord, ban: BanRecord | null): ApiKey {
  return {
    id: record.id,
    name: record.name,
    role: record.role,
    plan: record.plan,
    limits: quotaOf(record),
    prefix: record.prefix,
    createdAt: new Date(record.createdAt).toISOString(),
    revokedAt: record.revokedAt === null ? null : new Date(record.revokedAt).toISOString(),
    ban: ban === null ? null : { until: new Date(ban.endsAt).toISOString(), reason: ban.reason }
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

export interface KeyAdmin {
  create (input: NewApiKey): Promise<{ record: KeyRecord; key: string; view: ApiKey }>
  list (query: { limit?: number; cursor?: string }): Promise<Page<ApiKey>>
  get (id: number): Promise<{ record: KeyRecord; view: ApiKey }>
  update (id: number, patch: ApiKeyPatch, ifMatch: IfMatch): Promise<{ record: KeyRecord; view: ApiKey }>
  revoke (id: number, ifMatch: IfMatch): Promise<void>
  /** Lifts the key's ban in the database; returns how many bans were lifted. */
  unban (id: number): Promise<number>
}

export function createKeyAdmin (keys: KeyStore, clock: Clock, hooks: { onUnban?: (keyId: number) => Promise<void> } = {}): KeyAdmin {
  async function find (id: number): Promise<KeyRecord> {
    const record = isStorableId(id) ? await keys.getKey(id) : null
    if (record === null) throw notFound(`key ${id}`)
    return record
  }
  const view = async (record: KeyRecord): Promise<ApiKey> => toApiKey(record, await keys.activeBan(record.id, clock.now()))

  return {
    async create (input) {
      checkQuotas(input.plan, input.perMinute, input.perDay)
      const { key, hash, prefix } = generateKey()
      const record = await keys.createKey({
        name: input.name ?? null, role: input.role, plan: input.plan,
        perMinute: input.perMinute ?? null, perDay: input.perDay ?? null, hash, prefix, now: clock.now()
      })
      return { record, key, view: toApiKey(record, null) }
    },
    async list (query) {
      const page = pageRequest(query)
      const result = toPage(await keys.listKeys(page), page)
      return { items: await Promise.all(result.items.map(view)), nextCursor: result.nextCursor }
    },
    async get (id) {
      const record = await find(id)
      return { record, view: await view(record) }
    },
    async update (id, patch, ifMatch) {
      const current = await find(id)
      const plan = patch.plan ?? current.plan
      // Leaving enterprise drops the custom quotas; staying or arriving keeps or takes the new ones.
      const perMinute = plan === 'enterprise' ? (patch.perMinute ?? current.perMinute) : (patch.perMinute ?? null)
      const perDay = plan === 'enterprise' ? (patch.perDay ?? current.perDay) : (patch.perDay ?? null)
      checkQuotas(plan, perMinute, perDay)
      const record = await keys.updateKey(id, {
        ...(patch.name !== undefined && { name: patch.name }),
        ...(patch.role !== undefined && { role: patch.role }),
        plan, perMinute, perDay
      }, ifMatch)
      return { record, view: await view(record) }
    },
    async revoke (id, ifMatch) {
      if (!isStorableId(id)) throw notFound(`key ${id}`)
      await keys.revokeKey(id, clock.now(), ifMatch)
    },
    async unban (id) {
      await find(id)
      const lifted = await keys.liftBans(id, clock.now())
      await hooks.onUnban?.(id)
      return lifted
    }
  }
}
