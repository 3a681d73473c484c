// petstore serve [--sample-data [--keys-file PATH]] [--host H] [--port P]
import { open } from 'node:fs/promises'
import { isatty } from 'node:tty'
import { parseArgs } from 'node:util'
import { loadConfig } from '../config.ts'
import { redactText, redactUrl } from '../http/redact.ts'
import { loadSampleData, loadSampleKeysAndOrders } from '../sample-data.ts'
import { systemClock } from '../shared/clock.ts'
import { startTracingIfEnabled } from '../telemetry/enabled.ts'
import type { Io } from './io.ts'
import { prettyStdout, prettyWanted } from './pretty-log.ts'

export async function serve (args: string[], io: Io): Promise<number> {
  const { values } = parseArgs({
    args, strict: true,
    options: {
      'sample-data': { type: 'boolean', default: false },
      'keys-file': { type: 'string' },
      host: { type: 'string' },
      port: { type: 'string' }
    }
  })
  if (values['keys-file'] !== undefined && !values['sample-data']) {
    io.err('serve: --keys-file goes with --sample-data')
    return 2
  }
  const config = loadConfig({
    ...io.env,
    ...(values.host !== undefined && { HOST: values.host }),
    ...(values.port !== undefined && { PORT: values.port })
  })
  // Tracing starts before the server's modules load, so the drivers it instruments are patched as
  // they load; off, nothing of OpenTelemetry is imported (telemetry/enabled.ts). Spans are redacted
  // as the log lines are (http/redact.ts imports nothing, so nothing loads ahead of the SDK).
  const tracing = await startTracingIfEnabled(io.env, { url: redactUrl, text: redactText })
  const { createLogger, startServer } = await import('../server.ts')
  // The log goes to file descriptor 1 (server.ts): readable lines when a person watches it there.
  const logger = prettyWanted(config.logFormat, isatty(1)) ? createLogger(config, await prettyStdout()) : undefined
  const server = await startServer(config, {
    ...(logger !== undefined && { logger }),
    beforeListen: async (infra) => {
      if (!values['sample-data']) return
      if (!await loadSampleData(infra.stores)) return
      // A new database: make one key per role and show them once, so a newcomer can call the
      // API in the first minute. They are stored as hashes and never shown again. Never on
      // stdout: that is the log stream, which a platform collects and keeps (issue 19 item 7).
      const keys = await loadSampleKeysAndOrders(infra.stores, systemClock)
      const lines = keys.map(({ role, key }) => `  ${role.padEnd(8)} ${key}`)
      const file = values['keys-file']
      if (file === undefined) {
        io.err('Sample data loaded. API keys (shown once; store them now):')
        for (const line of lines) io.err(line)
        return
      }
      // Readable by this user only: a file that already existed with wider rights is narrowed
      // before the keys are written into it.
      const handle = await open(file, 'w', 0o600)
      try {
        await handle.chmod(0o600)
        await handle.writeFile(lines.join('\n') + '\n')
      } finally {
        await handle.close()
      }
      io.err(`Sample data loaded. API keys (shown once) written to ${file}`)
    }
  })
  // For people, like the sample keys: on stderr. Stdout is the log stream alone (JSON lines that
  // jq or a collector reads), from the first line to the last (issue 49 section 5).
  io.err(`Petstore API on ${server.url}/v1  (docs: ${server.url}/docs, operator console: ${server.url}/console, partner portal: ${server.url}/portal)`)
  const signal = await (io.stopSignal ?? new Promise<string>(() => {}))
  io.err(`${signal}: finishing requests in flight, then stopping`)
  await server.close()
  // The last spans go out now; a collector that is gone costs them, never the clean stop.
  await tracing?.shutdown().catch((error: unknown) => { io.err(`serve: traces not flushed at stop: ${(error as Error).message}`) })
  return 0
}
