// The installation order of the app, declared and checked. Each step of buildApp (app.ts) is a
// named Fastify plugin (fastify-plugin, as fastify/demo does) that lists the steps it needs
// installed before it; Fastify refuses to register a step whose needs are not registered yet
// (FST_ERR_PLUGIN_DEPENDENCY_NOT_REGISTERED), so a wrong order fails when the app is built, not
// at the first request.
import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import fastifyPlugin from 'fastify-plugin'

export interface Step<Name extends string = string> {
  readonly name: Name
  /** The steps that must be installed before this one. */
  readonly needs: readonly Name[]
  /** Adds hooks, settings or routes to `app`. */
  readonly install: (app: FastifyInstance) => void | Promise<void>
  /**
   * Routes that keep their own hooks to themselves (a Fastify child context); else the step's hooks
   * and settings are the app's.
   */
  readonly encapsulated?: boolean
  /** The route prefix of an encapsulated step. */
  readonly prefix?: string
}

/** Registers the steps in their order; each is checked against its needs as it is registered. */
export async function installSteps (app: FastifyInstance, steps: readonly Step[]): Promise<void> {
  for (const step of steps) {
    const plugin: FastifyPluginAsync = async (instance) => { await step.install(instance) }
    await app.register(fastifyPlugin(plugin, {
      name: step.name,
      dependencies: [...step.needs],
      encapsulate: step.encapsulated === true
    }), step.prefix === undefined ? {} : { prefix: step.prefix })
  }
}
