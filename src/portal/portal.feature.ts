// The partner portal as app.ts registers it (docs/product.md, "Partner portal"): the service on its
// port and the keys port; the /v1 operations that make one-time links; the pages and the session
// routes under /portal (the portal-routes step); and the session gate, handed to the guard here so
// that /portal/api/v1/* is decided as the session's key (access/portal-gate.ts).
import type { AccessService } from '../access/access.service.ts'
import type { KeyStore } from '../accounts/keys.store.ts'
import type { RateLimiter } from '../ratelimit/limiter.ts'
import type { Clock } from '../shared/clock.ts'
import type { FastifyInstance } from 'fastify'
import type { Feature } from '../routing/feature.ts'
import { portalLinkRoutes } from './portal-links.routes.ts'
import { portalRoutes } from './portal.routes.ts'
import { createPortal, type Portal } from './portal.service.ts'
import type { PortalStore } from './portal.store.ts'

export interface PortalShared {
  clock: Clock
  keys: KeyStore
  /** Bounds the link exchanges per client address (portal.routes.ts). */
  limiter: RateLimiter
  /** The guard: takes the portal's sessions for requests through /portal/api/v1. */
  access: AccessService
}

export interface PortalFeature extends Feature {
  readonly service: Portal
  /** The portal-routes step: GET /portal, its assets, and /portal/session. */
  readonly pages: (app: FastifyInstance) => Promise<void>
}

export function portalFeature (store: PortalStore, shared: PortalShared): PortalFeature {
  const portal = createPortal(store, shared.keys, shared.clock)
  shared.access.usePortal(portal.gate)
  return {
    service: portal,
    routes: async (v1) => { await v1.register(portalLinkRoutes, { portal }) },
    pages: async (app) => { await portalRoutes(app, { portal, limiter: shared.limiter }) }
  }
}
