// Preloaded into a server process by test/telemetry/tracing-off.test.ts (NODE_OPTIONS=--import):
// records every OpenTelemetry module the process resolves, through import or require, and writes
// the list to PETSTORE_TEST_LOADS_FILE when the process exits.
import { writeFileSync } from 'node:fs'
import { registerHooks } from 'node:module'

const loaded = new Set<string>()
registerHooks({
  resolve (specifier, context, nextResolve) {
    const result = nextResolve(specifier, context)
    if (/@opentelemetry\/|@fastify\/otel/.test(result.url)) loaded.add(result.url)
    return result
  }
})
process.on('exit', () => { writeFileSync(process.env.PETSTORE_TEST_LOADS_FILE!, JSON.stringify([...loaded])) })
