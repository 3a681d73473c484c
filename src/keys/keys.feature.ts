// Key administration as app.ts registers it: the admin service on the keys port, with what it
// reaches outside the database (the limiter, for a lifted ban, a key's windows and the keys a
// leaked-key report charges; the usage not yet flushed; the key-change notice), and its routes.
import type { KeyStore } from '../accounts/keys.store.ts'
import { reportedKeysCharge } from '../access/reported-keys.ts'
import type { RateLimiter } from '../ratelimit/limiter.ts'
import type { Feature } from '../routing/feature.ts'
import type { Clock } from '../shared/clock.ts'
import { keyRoutes } from './keys.routes.ts'
import { createKeyAdmin, type KeyAdminHooks } from './keys.service.ts'

export interface KeysShared extends Required<Pick<KeyAdminHooks, 'usage' | 'onKeyChanged' | 'deprecatedOperations'>> {
  clock: Clock
  limiter: Pick<RateLimiter, 'unban' | 'peek' | 'consume'>
}

export function keysFeature (store: KeyStore, shared: KeysShared): Feature {
  const { limiter } = shared
  const admin = createKeyAdmin(store, shared.clock, {
    // A lift is in the database at once; this instance's limiter drops the ban now, the others
    // at their next ban sync (jobs/ban-sync.ts).
    onUnban: async (_keyId, subject) => { await limiter.unban(subject) },
    peek: (subject, quota) => limiter.peek(subject, quota),
    usage: shared.usage,
    onKeyChanged: shared.onKeyChanged,
    deprecatedOperations: shared.deprecatedOperations,
    chargeReport: reportedKeysCharge(limiter, shared.clock)
  })
  return { routes: async (v1) => { await v1.register(keyRoutes, { admin }) } }
}
