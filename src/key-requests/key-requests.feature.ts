// The key's own request log as app.ts registers it: the recorder the pipeline hands each finished
// request to (null when REQUEST_LOG=off: nothing is recorded, the list answers what is kept), the
// service on its port (and on the keys port, for the admin read's not_found), its routes, and
// request_log_dropped_total on the app's registry.
import { Counter, type Registry } from 'prom-client'
import type { KeyStore } from '../accounts/keys.store.ts'
import type { Feature } from '../routing/feature.ts'
import { createRequestRecorder, type RequestRecorder } from './key-requests.recorder.ts'
import { keyRequestRoutes } from './key-requests.routes.ts'
import { createKeyRequestService } from './key-requests.service.ts'
import type { KeyRequestStore } from './key-requests.store.ts'

export interface KeyRequestsShared {
  /** REQUEST_LOG (config.ts): false records nothing, and the pipeline runs no step for it. */
  enabled: boolean
  /** The app's metrics registry (ops/metrics.ts), for request_log_dropped_total. */
  registry?: Registry
  /** The keys (GET /v1/admin/keys/{keyId}/requests answers not_found for an id no key has). */
  keys: Pick<KeyStore, 'getKey'>
}

export function keyRequestsFeature (store: KeyRequestStore, shared: KeyRequestsShared): Feature & {
  recorder: RequestRecorder | null
  store: KeyRequestStore
} {
  const recorder = shared.enabled ? createRequestRecorder(store) : null
  if (recorder !== null && shared.registry !== undefined) {
    let reported = 0
    new Counter({
      name: 'request_log_dropped_total',
      help: 'Requests the request log dropped from its full buffer before a flush (ones the per-key bound would keep).',
      registers: [shared.registry],
      collect () {
        const now = recorder.dropped()
        this.inc(now - reported)
        reported = now
      }
    })
  }
  const service = createKeyRequestService(store, recorder, shared.keys)
  return {
    recorder,
    store,
    routes: async (v1) => { await v1.register(keyRequestRoutes, { service }) }
  }
}
