// The rate-limit status as app.ts registers it: no service and no port, since GET /v1/rate_limit
// reports the decision the access step made for the request itself.
import type { Feature } from '../routing/feature.ts'
import { rateLimitRoutes } from './rate-limit-status.routes.ts'

export function rateLimitStatusFeature (): Feature {
  return { routes: async (v1) => { await v1.register(rateLimitRoutes) } }
}
