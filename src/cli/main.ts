#!/usr/bin/env -S MALLOC_ARENA_MAX=2 NODE_COMPILE_CACHE=${HOME}/.cache/petstore node --max-semi-space-size=4 --heap-growing-percent=20 --no-concurrent-recompilation
// petstore: the command line. Each command is run(args, io) -> exit code; this entry maps
// failures to one clear line and an exit code, never a stack trace.
// The shebang's Node flags (docs/performance.md, "Memory"): an 8 MiB young generation, and an old
// generation allowed to grow to 1.2 times what the last full GC kept (V8 chooses up to 4 times):
// the pages of V8's largest heap stay resident after a burst, so its peak is the process's RSS.
import { ConfigError } from '../config.ts'
import { AppError } from '../errors.ts'
import { InfraError } from '../infra.ts'
import { processIo, type Io } from './io.ts'

type Run = (args: string[], io: Io) => Promise<number>

interface Command {
  /** The arguments, as the usage text shows them. */
  synopsis: string
  /** What it does, in a line or two. */
  summary: string
  /** Subcommands, where the command has them: the usage text lists each (test/cli/usage.test.ts). */
  subcommands?: readonly string[]
  /** Imported when the command runs, so `keys list` never loads Fastify and `serve` never the CLI's key code. */
  load: () => Promise<Run>
}

export const COMMANDS: Record<string, Command> = {
  serve: {
    synopsis: '[--sample-data [--keys-file PATH]] [--host H] [--port P]',
    summary: 'serve the API (configuration from the environment); sample keys go to stderr, or to PATH (mode 0600)',
    load: async () => (await import('./serve.ts')).serve
  },
  migrate: {
    synopsis: '',
    summary: 'apply database migrations',
    load: async () => (await import('./migrate.ts')).migrate
  },
  keys: {
    synopsis: 'create|list|revoke|unban|rotate|usage|portal-link …',
    summary: 'administer API keys (`petstore keys` alone shows each subcommand\'s arguments)',
    subcommands: ['create', 'list', 'revoke', 'unban', 'rotate', 'usage', 'portal-link'],
    load: async () => (await import('./keys.ts')).keys
  },
  audit: {
    synopsis: 'verify [--known COUNT:HASH] [--json]',
    summary: 'check the audit log\'s hash chain: exit 1 naming the first entry changed, removed or inserted',
    subcommands: ['verify'],
    load: async () => (await import('./audit.ts')).audit
  },
  listen: {
    synopsis: '--forward-to URL [--types LIST] [--since TIME] [--cursor CURSOR] [--secret SECRET] [--base-url URL] [--poll-ms MS]',
    summary: 'follow the events of the key in PETSTORE_API_KEY and post each to a local URL, signed as a webhook delivery',
    load: async () => (await import('./listen.ts')).listen
  },
  trigger: {
    synopsis: 'TYPE [--webhook ID] | TYPE --forward-to URL --secret SECRET',
    summary: 'send a test event of TYPE, with its documented example: through the server to your endpoints, or straight to a local receiver',
    load: async () => (await import('./trigger.ts')).trigger
  },
  openapi: {
    synopsis: '[--out FILE] [--server URL]',
    summary: 'print or write the OpenAPI document',
    load: async () => (await import('./openapi.ts')).openapi
  }
}

export const USAGE = ['usage: petstore <command>', ...Object.entries(COMMANDS).flatMap(([name, c]) => [
  `  ${name}${c.synopsis === '' ? '' : ` ${c.synopsis}`}`,
  `      ${c.summary}`
])].join('\n')

export async function main (argv: string[], io: Io): Promise<number> {
  const [name, ...args] = argv
  const command = name === undefined || !Object.hasOwn(COMMANDS, name) ? undefined : COMMANDS[name]
  if (command === undefined) {
    io.err(USAGE)
    return 2
  }
  try {
    const run = await command.load()
    return await run(args, io)
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
