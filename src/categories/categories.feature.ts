// The categories feature as app.ts registers it: the service on its port, and its routes.
import type { Feature } from '../routing/feature.ts'
import type { Clock } from '../shared/clock.ts'
import { categoryRoutes } from './categories.routes.ts'
import { createCategoryService } from './categories.service.ts'
import type { CategoryStore } from './categories.store.ts'

export function categoriesFeature (store: CategoryStore, shared: { clock: Clock }): Feature {
  const categories = createCategoryService(store, shared.clock)
  return { routes: async (v1) => { await v1.register(categoryRoutes, { categories }) } }
}
