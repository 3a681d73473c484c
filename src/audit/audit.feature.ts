// The audit log as app.ts registers it: the service on its port, and its routes.
import type { Feature } from '../routing/feature.ts'
import { auditRoutes } from './audit.routes.ts'
import { createAuditService } from './audit.service.ts'
import type { AuditStore } from './audit.store.ts'

export function auditFeature (store: AuditStore): Feature {
  const audit = createAuditService(store)
  return { routes: async (v1) => { await v1.register(auditRoutes, { audit }) } }
}
