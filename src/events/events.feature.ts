// The event feed as app.ts registers it: the service on its port, and its routes.
import type { Feature } from '../routing/feature.ts'
import { eventRoutes } from './events.routes.ts'
import { createEventService } from './events.service.ts'
import type { EventStore } from './events.store.ts'

export function eventsFeature (store: EventStore): Feature {
  const events = createEventService(store)
  return { routes: async (v1) => { await v1.register(eventRoutes, { events }) } }
}
