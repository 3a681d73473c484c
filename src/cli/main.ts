#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=4
// petstore: the command line. Each command is run(args, io) -> exit code; this entry maps
// failures to one clear line and an exit code, never a stack trace.
import { ConfigError } from '../config.ts'
import { AppError } from '../errors.ts'
import { InfraError } from '../infra.ts'
import { processIo, type Io } from './io.ts'
import { keys } from './keys.ts'
import { migrate } from './migrate.ts'
import { openapi } from './openapi.ts'
import { serve } from './serve.ts'

const COMMANDS: Record<string, (args: string[], io: Io) => Promise<number>> = { serve, migrate, keys, openapi }

const USAGE = `usage: petstore <command>
  serve [--sample-data [--keys-file PATH]] [--host H] [--port P]
                                                serve the API (configuration from the environment);
                                                sample keys go to stderr, or to PATH (mode 0600)
  migrate                                       apply database migrations
  keys create|list|revoke|unban                 administer API keys
  openapi [--out FILE] [--server URL]           print or write the OpenAPI document`

export async function main (argv: string[], io: Io): Promise<number> {
  const [name, ...args] = argv
  const command = name === undefined ? undefined : COMMANDS[name]
  if (command === undefined) {
    io.err(USAGE)
    return 2
  }
  try {
    return await command(args, io)
  } catch (error) {
    io.err(`petstore ${name}: ${describe(error)}`)
    return error instanceof ConfigError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') === true ? 2 : 1
  }
}

function describe (error: unknown): string {
  if (error instanceof ConfigError || error instanceof InfraError || error instanceof AppError) return error.message
  const e = error as { code?: string; message?: string }
  if (e.code?.startsWith('ERR_PARSE_ARGS') === true) return e.message ?? 'bad arguments'
  if (e.code === 'EADDRINUSE') return 'the port is already in use'
  if (e.code === 'EACCES') return 'permission denied (port or file)'
  return e.message?.split('\n', 1)[0] ?? 'failed'
}

if (import.meta.main) {
  process.exitCode = await main(process.argv.slice(2), processIo())
  // Nothing left open may keep a finished command alive, but what it printed must get out first:
  // exit once stdout has flushed (a piped stdout is asynchronous). For serve this is after the
  // drain and the stores' close, both bounded (server.ts): a socket or timer a library left open
  // must not hold the stop.
  process.stdout.write('', () => process.exit(process.exitCode))
}
