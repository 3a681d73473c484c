// A key holder's own key (/v1/keys/me) as app.ts registers it: the service on the keys port, with
// the usage not yet flushed, the deprecated operations (which the usage recorder already holds,
// for deprecation.used) and the key-change notice (a rotation changes the key's expiry).
import type { KeyStore } from '../accounts/keys.store.ts'
import type { UsageRecorder } from '../access/usage.ts'
import type { Feature } from '../routing/feature.ts'
import type { Clock } from '../shared/clock.ts'
import { keyHolderRoutes } from './key-holder.routes.ts'
import { createKeyHolder, type KeyHolderHooks } from './key-holder.service.ts'

export interface KeyHolderShared extends Required<Pick<KeyHolderHooks, 'onKeyChanged'>> {
  clock: Clock
  usage: Pick<UsageRecorder, 'flush' | 'lastUsedAt' | 'deprecatedOperations'>
}

export function keyHolderFeature (store: KeyStore, shared: KeyHolderShared): Feature {
  const { usage, onKeyChanged } = shared
  const holder = createKeyHolder(store, shared.clock, {
    usage, onKeyChanged, deprecatedOperations: () => usage.deprecatedOperations()
  })
  return { routes: async (v1) => { await v1.register(keyHolderRoutes, { holder }) } }
}
