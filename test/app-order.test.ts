// The installation order of buildApp (src/app.ts, src/http/steps.ts): each step names the steps
// it needs, and a step installed before one of them fails the build with an error naming both,
// instead of an app that starts and misbehaves at the first request. The steps are rearranged
// through assembleApp, the function under buildApp that takes an arrangement.
import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { assembleApp, type AppStep, type StepName } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'
import type { Step } from '../src/http/steps.ts'
import { createMemoryRateLimiter } from '../src/ratelimit/memory.ts'
import { openTestStores } from './helpers/stores.ts'

/** Builds the app with its steps rearranged; the app (when the build succeeds) is closed after the test. */
async function buildWith (t: TestContext, arrange: (steps: readonly AppStep[]) => readonly Step[]): Promise<void> {
  const stores = await openTestStores(t)
  const app = await assembleApp({
    config: loadConfig({ DATABASE_URL: 'sqlite::memory:' }),
    stores,
    limiter: createMemoryRateLimiter(),
    usageFlushMs: 0
  }, arrange)
  t.after(() => app.close())
  await app.ready()
}

/** The steps with `name` moved to just before `before`. */
const moveBefore = (name: StepName, before: StepName) => (steps: readonly AppStep[]): AppStep[] => {
  const moved = steps.find((s) => s.name === name)!
  const rest = steps.filter((s) => s !== moved)
  const at = rest.findIndex((s) => s.name === before)
  return [...rest.slice(0, at), moved, ...rest.slice(at)]
}

const notRegistered = (dependency: string, plugin: string) => (error: Error & { code?: string }) => {
  assert.equal(error.code, 'FST_ERR_PLUGIN_DEPENDENCY_NOT_REGISTERED')
  assert.equal(error.message, `The dependency '${dependency}' of plugin '${plugin}' is not registered`)
  return true
}

test('the declared order builds an app that answers', async (t) => {
  let names: StepName[] = []
  await buildWith(t, (steps) => { names = steps.map((s) => s.name); return steps })
  assert.deepEqual(names, [
    'deprecations', 'roles', 'validation', 'errors', 'json', 'pipeline', 'openapi', 'mcp-tools', 'v1-routes',
    'mcp-routes', 'health-routes', 'metrics-routes', 'openapi-routes', 'docs-routes', 'console-routes', 'portal-routes'
  ])
})

test('the /v1 routes declared before the pipeline fail the build (they would run without the access step)', async (t) => {
  await assert.rejects(buildWith(t, moveBefore('v1-routes', 'pipeline')), notRegistered('pipeline', 'v1-routes'))
})

test('the /v1 routes declared before the OpenAPI hooks fail the build (they would be missing from the document)', async (t) => {
  await assert.rejects(buildWith(t, moveBefore('v1-routes', 'openapi')), notRegistered('openapi', 'v1-routes'))
})

test('the /v1 routes declared before the MCP tool collector fail the build (their tools would be missing)', async (t) => {
  await assert.rejects(buildWith(t, moveBefore('v1-routes', 'mcp-tools')), notRegistered('mcp-tools', 'v1-routes'))
})

test('a step left out fails the build of every step that needs it', async (t) => {
  await assert.rejects(buildWith(t, (steps) => steps.filter((s) => s.name !== 'json')), notRegistered('json', 'v1-routes'))
})

test('every step that needs another fails the build when it is installed first; one that needs nothing builds', async (t) => {
  const declared: AppStep[] = []
  await buildWith(t, (steps) => { declared.push(...steps); return steps })
  for (const step of declared) {
    await t.test(step.name, async (t) => {
      const build = buildWith(t, (steps) => [
        steps.find((s) => s.name === step.name)!,
        ...steps.filter((s) => s.name !== step.name)
      ])
      if (step.needs.length === 0) await build
      else await assert.rejects(build, notRegistered(step.needs[0]!, step.name))
    })
  }
})
