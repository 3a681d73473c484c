// A redis-server of a test's own, on a free port and without persistence, so that a test can
// flush it, stop it and start it again: the shared Redis is never touched.
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:net'
import type { TestContext } from 'node:test'
import { Redis } from 'ioredis'
import { requireService } from '../helpers/services.ts'
import { pollUntil } from '../scale/helpers.ts'

export async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

/** False (the test skipped, or failed under CI) when redis-server is not installed. */
export async function requireRedisServer (t: TestContext): Promise<boolean> {
  const which = spawn('redis-server', ['--version'], { stdio: 'ignore' })
  const [code] = await once(which, 'exit').catch(() => [1]) as [number]
  return requireService(t, code === 0 ? null : 'redis-server is not installed')
}

/** A redis-server of this test's own, without persistence: stop() loses every key, like a restart. */
export async function ownRedis (port: number): Promise<{ stop (): Promise<void> }> {
  const child: ChildProcess = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
  const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
  probe.on('error', () => {})
  await pollUntil(async () => {
    await probe.connect().catch(() => {})
    return await probe.ping() === 'PONG' ? true : undefined
  }, { timeoutMs: 10_000, intervalMs: 50, message: 'redis-server did not start' })
  probe.disconnect()
  return {
    async stop () {
      if (child.exitCode !== null) return
      child.kill('SIGTERM')
      await once(child, 'exit')
    }
  }
}
