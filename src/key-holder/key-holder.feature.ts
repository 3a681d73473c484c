// A key holder's own key (/v1/keys/me) as app.ts registers it: the service on the keys port, with
// the usage not yet flushed and the key-change notice (a rotation changes the key's expiry).
import type { KeyStore } from '../accounts/keys.store.ts'
import type { Feature } from '../routing/feature.ts'
import type { Clock } from '../shared/clock.ts'
import { keyHolderRoutes } from './key-holder.routes.ts'
import { createKeyHolder, type KeyHolderHooks } from './key-holder.service.ts'

export interface KeyHolderShared extends Required<Pick<KeyHolderHooks, 'usage' | 'onKeyChanged'>> {
  clock: Clock
}

export function keyHolderFeature (store: KeyStore, shared: KeyHolderShared): Feature {
  const holder = createKeyHolder(store, shared.clock, { usage: shared.usage, onKeyChanged: shared.onKeyChanged })
  return { routes: async (v1) => { await v1.register(keyHolderRoutes, { holder }) } }
}
