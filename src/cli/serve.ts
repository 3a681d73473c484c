// petstore serve [--sample-data] [--host H] [--port P]
import { parseArgs } from 'node:util'
import { loadConfig } from '../config.ts'
import { loadSampleData, loadSampleKeysAndOrders } from '../sample-data.ts'
import { startServer } from '../server.ts'
import { systemClock } from '../shared/clock.ts'
import type { Io } from './io.ts'

export async function serve (args: string[], io: Io): Promise<number> {
  const { values } = parseArgs({ args, strict: true, options: { 'sample-data': { type: 'boolean', default: false }, host: { type: 'string' }, port: { type: 'string' } } })
  const config = loadConfig({ ...io.env, ...(values.host !== undefined && { HOST: values.host }), ...(values.port !== undefined && { PORT: values.port }) })
  const server = await startServer(config, {
    beforeListen: async (infra) => {
      if (!values['sample-data']) return
      if (!await loadSampleData(infra.stores)) return
      // A new database: make one key per role and show them once, so a newcomer can call the
      // API in the first minute. They are stored as hashes and never shown again.
      const keys = await loadSampleKeysAndOrders(infra.stores, systemClock)
      io.out('Sample data loaded. API keys (shown once; store them now):')
      for (const { role, key } of keys) io.out(`  ${role.padEnd(8)} ${key}`)
    }
  })
  io.out(`Petstore API on ${server.url}/v1  (docs: ${server.url}/docs)`)
  const signal = await (io.stopSignal ?? new Promise<string>(() => {}))
  io.out(`${signal}: finishing requests in flight, then stopping`)
  await server.close()
  return 0
}
