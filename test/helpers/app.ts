// Builds the real app for a test: real storage (SQLite in memory by default, or PostgreSQL with
// PETSTORE_TEST_ENGINE=postgres), the memory limiter (or Redis with PETSTORE_TEST_LIMITER=redis),
// a manual clock, and one API key per role. Every response a test receives through `call` is
// checked against the OpenAPI document (test/helpers/contract.ts).
import type { TestContext } from 'node:test'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { assembleApp, buildApp, type AppDeps, type AppStep } from '../../src/app.ts'
import { loadConfig, type Config } from '../../src/config.ts'
import type { Step } from '../../src/http/steps.ts'
import { createKeyAdmin } from '../../src/keys/keys.service.ts'
import type { Plan, Role } from '../../src/accounts/plans.ts'
import type { RateLimiter } from '../../src/ratelimit/limiter.ts'
import { manualClock } from '../../src/shared/clock.ts'
import type { Stores } from '../../src/storage/stores.ts'
import { checkResponse } from './contract.ts'
import { openTestLimiter } from './limiter.ts'
import { openTestStores } from './stores.ts'

/** 2026-11-21T12:00:30Z: mid-minute, so a test's first requests share one minute window. */
export const T0 = Date.UTC(2026, 10, 21, 12, 0, 30)

export interface TestApp {
  app: FastifyInstance
  stores: Stores
  limiter: RateLimiter
  clock: ReturnType<typeof manualClock>
  config: Config
  keys: Record<Role, string>
  /** app.inject, plus the document check of the response. */
  call (options: InjectOptions & { key?: string | null; role?: Role }): Promise<LightMyRequestResponse>
  /** Makes another key (another customer, another plan). */
  makeKey (
    role: Role,
    plan?: Plan,
    quotas?: { perMinute: number; perDay: number }
  ): Promise<{ id: number; key: string }>
}

export interface TestAppOptions {
  env?: Record<string, string>
  limiter?: (clock: () => number) => RateLimiter | Promise<RateLimiter>
  stores?: Stores
  deps?: Partial<AppDeps>
  /** Rearranges the app's installation steps before they are installed (src/app.ts assembleApp). */
  arrangeSteps?: (steps: readonly AppStep[]) => readonly Step[]
  /** Plan of the three default keys; enterprise with huge quotas so tests are never limited by accident. */
  plan?: Plan
}

export async function buildTestApp (t: TestContext, options: TestAppOptions = {}): Promise<TestApp> {
  const clock = manualClock(T0)
  const config = loadConfig({ DATABASE_URL: 'sqlite::memory:', ...options.env })
  const stores = options.stores ?? await openTestStores(t)
  const limiter = options.limiter !== undefined ? await options.limiter(clock.now) : await openTestLimiter(t, clock.now)
  // Webhook attempts never leave this machine in a test, whatever URL a test subscribes.
  const webhooks = { mayConnect: isLoopback, ...options.deps?.webhooks }
  const deps = { config, stores, limiter, clock, ...options.deps, webhooks }
  const app = options.arrangeSteps === undefined ? await buildApp(deps) : await assembleApp(deps, options.arrangeSteps)
  t.after(async () => {
    await app.close()
    await limiter.close()
  })
  await app.ready()

  const admin = createKeyAdmin(stores.keys, clock)
  const makeKey: TestApp['makeKey'] = async (role, plan = 'enterprise', quotas) => {
    const q = plan === 'enterprise' ? (quotas ?? { perMinute: 1_000_000, perDay: 1_000_000 }) : undefined
    const { record, key } = await admin.create({
      role,
      plan,
      ...(q !== undefined && { perMinute: q.perMinute, perDay: q.perDay })
    })
    return { id: record.id, key }
  }
  const keys = {} as Record<Role, string>
  for (const role of ['customer', 'staff', 'admin'] as const) keys[role] = (await makeKey(role, options.plan ?? 'enterprise')).key

  const call: TestApp['call'] = async ({ key, role, ...inject }) => {
    const headers: Record<string, string> = { ...(inject.headers as Record<string, string> | undefined) }
    const chosen = key !== undefined ? key : keys[role ?? 'admin']
    if (chosen !== null) headers['x-api-key'] = chosen
    const response = await app.inject({ ...inject, headers })
    checkResponse(app, inject, response)
    return response
  }

  return { app, stores, limiter, clock, config, keys, call, makeKey }
}

/**
 * The test app listening on 127.0.0.1 and a free port, for a test that needs real HTTP (fetch, a
 * client); closed with the app after the test.
 */
export async function listenTestApp (
  t: TestContext,
  options: TestAppOptions = {}
): Promise<TestApp & { baseUrl: string }> {
  const testApp = await buildTestApp(t, options)
  const address = await testApp.app.listen({ host: '127.0.0.1', port: 0 })
  return { ...testApp, baseUrl: `${address}/v1` }
}

/** 127.0.0.0/8 and ::1 (also IPv4-mapped): the only addresses a test's webhook attempt may reach. */
export function isLoopback (address: string): boolean {
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address
  return v4.startsWith('127.') || address === '::1'
}
