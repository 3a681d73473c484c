// The one pipeline step (src/http/pipeline.ts): every route runs the one request step and the one
// response step and no other hook of the pipeline's, reads run no preHandler and no preParsing,
// and only the routes that write run the audit log's actor. A hook added beside the step (a
// second request path), a read paying for the actor, or a guard left as a hook of its own fails.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp } from '../helpers/app.ts'

interface RouteHooks { route: string; hooks: Map<string, string[]> }

/** Fastify's route tree with hooks (printRoutes), read back as each route's hooks by kind. */
function routesWithHooks (tree: string): RouteHooks[] {
  const routes: RouteHooks[] = []
  const path: string[] = []
  for (const line of tree.split('\n')) {
    const hook = /• \((\w+)\) (\[.*\])$/.exec(line)
    if (hook !== null) {
      routes.at(-1)!.hooks.set(hook[1]!, JSON.parse(hook[2]!) as string[])
      continue
    }
    const route = /^([│ ]*)(?:[├└]── )?(\S*) \(([A-Z, ]+)\)$/.exec(line)
    if (route === null) continue
    const depth = Math.floor(route[1]!.length / 4)
    path.length = depth
    path[depth] = route[2]!
    routes.push({ route: `${route[3]} ${path.join('')}`, hooks: new Map() })
  }
  return routes
}

test('every route runs the one request step and the one response step; only writes run the actor, no read a preHandler or a preParsing hook', async (t) => {
  const { app } = await buildTestApp(t)
  const routes = routesWithHooks(app.printRoutes({ includeHooks: true, commonPrefix: false }))
  assert.ok(routes.length >= 60, `the routes were read (${routes.length})`)
  for (const { route, hooks } of routes) {
    const reads = /^(GET|HEAD|OPTIONS)(, (GET|HEAD|OPTIONS))*\s/.test(route)
    // The console adds a hook of its own for its static files.
    const ownOnRequest = /^\S+ \/console/.test(route) ? 1 : 0
    const onRequest = hooks.get('onRequest') ?? []
    assert.equal(onRequest[0], 'requestStep()', `${route}: the request step is its first onRequest hook`)
    assert.equal(onRequest.length, 1 + ownOnRequest, `${route}: onRequest hooks ${JSON.stringify(onRequest)}`)
    assert.deepEqual(hooks.get('onResponse'), ['responseStep()'], `${route}: onResponse hooks`)
    assert.equal(hooks.get('preParsing'), undefined, `${route}: no preParsing hook (the body guard is in the step)`)
    if (reads) assert.equal(hooks.get('preHandler'), undefined, `${route}: a read runs no preHandler`)
    else assert.deepEqual(hooks.get('preHandler'), ['actorStep()'], `${route}: a write runs the actor, once`)
  }
})
