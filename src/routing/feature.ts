// What a feature hands app.ts. Each feature folder has a <feature>.feature.ts that builds the
// feature's service from its ports and the few shared things it is given (the clock, its section
// of the configuration, the key-change notice …) and returns its routes, ready to register; app.ts
// lists the features and registers them under /v1, and builds none of their parts itself.
import type { FastifyInstance } from 'fastify'

export interface Feature {
  /** Declares the feature's operations on the app's /v1 scope (app.ts's v1-routes step). */
  readonly routes: (v1: FastifyInstance) => Promise<void>
}

/** The v1-routes step: each feature's routes, in the order they are listed. */
export function featureRoutes (features: Readonly<Record<string, Feature>>): (v1: FastifyInstance) => Promise<void> {
  return async (v1) => {
    for (const feature of Object.values(features)) await feature.routes(v1)
  }
}
