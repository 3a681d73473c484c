// The API keys port: keys (stored as hashes) and the ban records admins list and lift.
import type { IfMatch, PageRequest } from '../shared/store.ts'
import type { Plan, Role } from './keys.schema.ts'

export interface KeyRecord {
  id: number
  name: string | null
  role: Role
  plan: Plan
  /** Custom quotas (enterprise); null for the plans' own. */
  perMinute: number | null
  perDay: number | null
  prefix: string
  createdAt: number // epoch ms
  revokedAt: number | null
  version: number
}

export interface BanRecord {
  id: number
  keyId: number | null
  subject: string
  startedAt: number
  endsAt: number
  reason: string
  liftedAt: number | null
}

export interface KeyStore {
  createKey (input: { name: string | null; role: Role; plan: Plan; perMinute: number | null; perDay: number | null; hash: string; prefix: string; now: number }): Promise<KeyRecord>
  /** Includes revoked keys; the caller decides. */
  findKeyByHash (hash: string): Promise<KeyRecord | null>
  getKey (id: number): Promise<KeyRecord | null>
  listKeys (page: PageRequest): Promise<KeyRecord[]>
  /** Throws not_found, precondition_failed. */
  updateKey (id: number, changes: { name?: string; role?: Role; plan?: Plan; perMinute?: number | null; perDay?: number | null }, ifMatch: IfMatch): Promise<KeyRecord>
  /** Idempotent; throws not_found. */
  revokeKey (id: number, now: number, ifMatch: IfMatch): Promise<KeyRecord>
  recordBan (ban: Omit<BanRecord, 'id' | 'liftedAt'>): Promise<BanRecord>
  /** The ban of a key in force at `now` (latest ending), if any. */
  activeBan (keyId: number, now: number): Promise<BanRecord | null>
  /** Marks the key's bans in force as lifted; returns how many. */
  liftBans (keyId: number, now: number): Promise<number>
  /** Bans lifted after `since` (epoch ms): running instances poll this to drop them from the limiter. */
  bansLiftedSince (since: number): Promise<BanRecord[]>
}
