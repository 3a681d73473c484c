// The pets feature as app.ts registers it: the service on its port, and its routes.
import type { Feature } from '../routing/feature.ts'
import { deprecatedOperation } from '../routing/lifecycle.ts'
import type { Clock } from '../shared/clock.ts'
import { petRoutes } from './pets.routes.ts'
import { createPetService } from './pets.service.ts'
import type { PetStore } from './pets.store.ts'

/** The 1.0.0 release deprecated GET /pets/{petId}; its sunset comes from the configuration. */
export const GET_PET_DEPRECATED_AT = new Date('2026-11-21T00:00:00Z')

/** `getPetSunset`: when GET /pets/{petId} stops working (PETSTORE_GET_PET_SUNSET). */
export function petsFeature (store: PetStore, shared: { clock: Clock; getPetSunset: Date }): Feature {
  const { clock } = shared
  const pets = createPetService(store, clock)
  const successor = { method: 'GET', path: '/v1/pets?id={petId}', operationId: 'listPets' }
  const getPetLifecycle = deprecatedOperation(GET_PET_DEPRECATED_AT, shared.getPetSunset, successor)
  return { routes: async (v1) => { await v1.register(petRoutes, { pets, clock, getPetLifecycle }) } }
}
