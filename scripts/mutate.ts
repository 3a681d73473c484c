// npm run mutate -- PART [stryker flags]: mutation testing of one part of the security core
// (issue 22). Each part names the files it mutates and the test files that can kill their
// mutants; Stryker's perTest coverage then runs, for each mutant, only the test files that cover
// it. Incremental mode keeps one file per part under .stryker/, so a rerun tests only what
// changed since the last run of that part. Not part of npm test or CI: a part takes minutes to
// half an hour on two cores. Stryker is not in the project's npm ci: it is installed in
// tools/mutate on the first run (scripts/tools.ts). See docs/testing.md.
import { spawnSync } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { installTool, pinnedNodePath } from './tools.ts'

interface Part {
  mutate: string[]
  tests: string[]
  /** Added to a mutant's expected run time before it counts as timed out (default 30 s). */
  timeoutMS?: number
  /** More arguments for each test file's node (after --test-reporter=tap). */
  nodeArgs?: string[]
}

export const PARTS: Record<string, Part> = {
  keys: {
    mutate: ['src/keys/*.ts', 'src/accounts/*.ts', '!src/keys/*.schema.ts', '!src/keys/*.routes.ts', '!src/accounts/plans.ts'],
    // Fastest first (the unit tests take 4 s a run, the HTTP ones 6 to 15 s). Not listed:
    // test/cli/effects.test.ts (49 s a run: the same commands as cli.test.ts and
    // keys-lifecycle.test.ts, against server processes, which matters for src/access/, not here)
    // and the per-request tests, which are the access part's since src/access/ left src/keys/.
    tests: ['test/keys/keys.service.test.ts', 'test/keys/*.test.ts', 'test/cli/keys-lifecycle.test.ts', 'test/cli/cli.test.ts', 'test/keys/key-lifecycle.http.test.ts', 'test/keys/console-admin.http.test.ts', 'test/access/key-access.http.test.ts', 'test/access/access-revocation.http.test.ts', 'test/access/key-checksum.http.test.ts', 'test/access/scopes.test.ts', 'test/access/scopes.http.test.ts']
  },
  ratelimit: {
    mutate: ['src/ratelimit/*.ts'],
    // The unit tests only, fast in-process ones first, then those on the real Redis. Left out for
    // time (with them a surviving mutant cost a minute): the million-subject test (memory-bound),
    // the one with a redis-server of its own (ban-restore-redis) and the HTTP access tests; the
    // unit tests take the same paths directly.
    // In-process tests of a few seconds: a mutant that loops forever (an eviction step that
    // never ends) would otherwise cost 30 s.
    timeoutMS: 5000,
    tests: ['test/ratelimit/limiter-rules.test.ts', 'test/ratelimit/limiter.test.ts', 'test/ratelimit/memory.test.ts', 'test/ratelimit/fallback.test.ts', 'test/ratelimit/fallback-bans.test.ts', 'test/ratelimit/redis.test.ts', 'test/ratelimit/redis-replies.test.ts', 'test/ratelimit/redis-memory.test.ts']
  },
  access: {
    mutate: ['src/access/*.ts', 'src/http/access.ts'],
    // The unit tests first, named (a mutant they kill never waits for a server), then the HTTP
    // tests of the hook, fastest first. Left out for time (with them a surviving mutant cost two
    // minutes on a loaded machine): the route-table sweep access-routes.test.ts (12 s; the path
    // readings it relies on are pinned one by one in access-paths.test.ts, the hook's 404 for an
    // empty segment in access-targets.test.ts), key-access, access-revocation and access-proxy
    // (rotation, expiry and forgetting are pinned in key-cache.test.ts and
    // access-decisions.test.ts; the proxy address is Fastify's), and ban-restore (servers on a
    // file; restoreBans is pinned in ban-sync-poll.test.ts).
    // In-process tests: a mutant that never answers would otherwise cost 30 s. A mutant that
    // makes the hook never call done() leaves a request waiting: each test ends at 30 s
    // (--test-timeout) rather than at Stryker's timeout of 2.5 times the covering files' time.
    timeoutMS: 10000,
    nodeArgs: ['--test-timeout=30000'],
    tests: [
      'test/access/access.service.test.ts', 'test/access/access-decisions.test.ts', 'test/access/access-bans.test.ts', 'test/access/access-failures.test.ts', 'test/access/access-known-keys.test.ts',
      'test/access/key-cache.test.ts', 'test/access/refusals.test.ts', 'test/access/ban-record.test.ts', 'test/access/ban-sync-poll.test.ts',
      'test/access/client-subject.test.ts', 'test/access/key-events.test.ts', 'test/access/usage.test.ts', 'test/access/usage-flush.test.ts',
      'test/access/access-paths.http.test.ts', 'test/access/access-headers.http.test.ts', 'test/access/access-route-roles.http.test.ts', 'test/access/address-subject.test.ts',
      'test/access/access-outage.http.test.ts', 'test/access/ban-sync.test.ts', 'test/access/access-logs.http.test.ts', 'test/access/access-charged.http.test.ts',
      'test/access/access-targets.http.test.ts', 'test/access/access-secrets.http.test.ts', 'test/access/access.http.test.ts',
      // A banned key's own routes (banExempt) and the day count put back after a restart (day-seed.ts).
      'test/key-holder/key-holder.http.test.ts', 'test/events/usage-events.http.test.ts'
    ]
  },
  pipeline: {
    // The one pipeline step (src/http/pipeline.ts): its order, its plan per route, its headers.
    // In-process HTTP tests, fastest first; a mutant that never calls done() ends at 30 s.
    mutate: ['src/http/pipeline.ts'],
    timeoutMS: 10000,
    nodeArgs: ['--test-timeout=30000'],
    tests: ['test/http/pipeline.test.ts', 'test/http/response-headers.http.test.ts', 'test/http/cors.http.test.ts', 'test/http/lifecycle.http.test.ts', 'test/access/access.http.test.ts', 'test/access/access-charged.http.test.ts', 'test/audit/audit.http.test.ts', 'test/ops/metrics.test.ts', 'test/transport/deadlines.test.ts', 'test/http/errors.http.test.ts', 'test/http/logging.http.test.ts']
  },
  redact: {
    // What no log line or error may carry (src/http/redact.ts): a key in the URL, a message, a
    // field or an error, and the query parameter the access step refuses a key in. Its tests,
    // fastest first; the access part's list does not run them.
    mutate: ['src/http/redact.ts'],
    timeoutMS: 10000,
    tests: ['test/http/redact.test.ts', 'test/access/refusals.test.ts', 'test/http/request-log-line.http.test.ts', 'test/http/logging-redaction.http.test.ts', 'test/http/logging.http.test.ts', 'test/access/access-secrets.http.test.ts', 'test/access/access-targets.http.test.ts', 'test/server/request-hygiene.test.ts']
  },
  checks: {
    mutate: ['src/storage/checks.ts'],
    tests: ['test/storage/checks.test.ts', 'test/storage/sqlite/stores.test.ts', 'test/pets/pets.http.test.ts', 'test/categories/categories.http.test.ts', 'test/orders/orders.http.test.ts', 'test/inventory/inventory.http.test.ts', 'test/keys/key-lifecycle.http.test.ts']
  },
  writer: {
    mutate: ['src/storage/sqlite/database.ts', 'src/storage/sqlite/writer.ts', 'src/storage/sqlite/checkpoint.ts'],
    // The writer's own tests first (a few seconds each; sqlite-writer-edges counts the lock
    // retries on mocked timers in milliseconds), then the checkpoint test (it writes
    // 32 MiB) and the store tests. Left out: the pet cache's tests (they test the cache), and for
    // time the lock and crash tests (HTTP servers and child processes, 25 s a mutant); the unit
    // tests take the writer's paths directly.
    tests: ['test/storage/sqlite/open.test.ts', 'test/storage/sqlite/writer-edges.test.ts', 'test/storage/sqlite/writer-paths.test.ts', 'test/storage/sqlite/writer-failures.test.ts', 'test/storage/sqlite/writer.test.ts', 'test/storage/sqlite/checkpointer.test.ts', 'test/storage/sqlite/checkpoint.test.ts', 'test/storage/sqlite/stores.test.ts'],
    // The tests run in a few seconds; a mutant that makes the writer wait forever (a retry loop,
    // a close() that is never told) would otherwise cost 30 s.
    timeoutMS: 10000
  },
  client: {
    mutate: ['clients/typescript/src/*.ts', '!clients/typescript/src/openapi.ts'],
    // The fast unit tests first: a mutant they kill never waits for the server tests (the tap
    // runner stops at the first test file that fails).
    // The client's tests run in process in a few seconds, and many of its mutants loop forever
    // (a retry or pump loop that never ends): a short timeout saves minutes per such mutant.
    timeoutMS: 5000,
    tests: ['clients/typescript/test/headers.test.ts', 'clients/typescript/test/errors.test.ts', 'clients/typescript/test/gate.test.ts', 'clients/typescript/test/requests.test.ts', 'clients/typescript/test/calls.test.ts', 'clients/typescript/test/client.test.ts', 'clients/typescript/test/ratelimit.test.ts']
  },
  webhooks: {
    // The SSRF guard (every address family and spelling), the signature, one attempt, and the
    // dispatcher's settling and slot rules (issue 52). The unit tests first: the guard's and the
    // signature's run in under a second with stub resolvers; the attempt's against receivers on
    // 127.0.0.0/8 in a few; then the dispatcher's HTTP tests, fastest first.
    mutate: ['src/webhooks/url-guard.ts', 'src/webhooks/signature.ts', 'src/webhooks/attempt.ts', 'src/webhooks/dispatcher.ts'],
    // A mutant that makes an attempt or a retry loop wait forever would otherwise cost 30 s;
    // each test file's tests end at 30 s (an attempt that never settles).
    timeoutMS: 10000,
    nodeArgs: ['--test-timeout=30000'],
    tests: [
      'test/webhooks/url-guard.test.ts', 'test/webhooks/signature.test.ts', 'test/webhooks/attempt.test.ts',
      'test/webhooks/attempt-edges.test.ts', 'test/webhooks/attempt-keep-alive.test.ts',
      'test/webhooks/dispatcher-slots.test.ts', 'test/webhooks/dispatcher-rules.test.ts', 'test/webhooks/schedule.test.ts',
      'test/webhooks/settle.http.test.ts', 'test/webhooks/fairness.http.test.ts', 'test/webhooks/owners.http.test.ts',
      'test/webhooks/delivery.http.test.ts', 'test/webhooks/webhooks.http.test.ts'
    ]
  },
  audit: {
    // The audit chain (issue 52): the rules that make each entry and its hash, the walk of
    // `petstore audit verify` and its verdicts on the command line. The unit tests of the chain
    // first (a stand-in store), then the command in process on a SQLite file, then the HTTP tests
    // that write entries through the API (the entry rules: actors, fields, before and after).
    // test/cli/audit-verify.test.ts runs the command as a process: it covers nothing for Stryker.
    mutate: ['src/audit/audit.rules.ts', 'src/audit/audit.service.ts', 'src/cli/audit.ts'],
    timeoutMS: 10000,
    tests: ['test/audit/audit-chain.test.ts', 'test/audit/audit-verify-verdicts.test.ts', 'test/audit/audit.http.test.ts', 'test/audit/audit-changes.http.test.ts', 'test/audit/audit-verify.http.test.ts', 'test/key-holder/self-rotation-audit.http.test.ts', 'test/keys/leaked-keys.http.test.ts']
  },
  mcp: {
    // The agent door (issue 52): the handling of every /mcp message, the loop breaker of repeated
    // tool calls and the mapping of a call's arguments. The unit tests of the breaker and the
    // arguments first, then the HTTP tests through the official SDK's client, fastest first. Not
    // listed: inspector.test.ts (a child process: it covers nothing for Stryker), and for time
    // mcp-flood (1,100 requests from 11 addresses; mcp-messages answers each kind of message
    // once) and rate-limit.mcp (the whole rate-limit suite over MCP).
    mutate: ['src/mcp/mcp.routes.ts', 'src/mcp/repeat.ts', 'src/mcp/arguments.ts'],
    timeoutMS: 10000,
    nodeArgs: ['--test-timeout=30000'],
    tests: ['test/mcp/arguments.test.ts', 'test/mcp/repeat-guard.test.ts', 'test/mcp/mcp-door-edges.http.test.ts', 'test/mcp/mcp-messages.http.test.ts', 'test/mcp/mcp.http.test.ts', 'test/mcp/mcp-tools.http.test.ts', 'test/mcp/mcp-scopes.http.test.ts']
  },
  'free-reads': {
    // A banned key's free reads and the leaked-key report's charge per key (issue 48 findings 5
    // and 6), narrower than `access`: the unit tests on the real memory limiter first (under a
    // second a run), then the two HTTP tests that reach the same code through the hook and the
    // report's route (3 to 6 s each).
    mutate: ['src/access/free-reads.ts', 'src/access/reported-keys.ts'],
    timeoutMS: 10000,
    nodeArgs: ['--test-timeout=30000'],
    tests: ['test/access/free-reads.test.ts', 'test/access/free-reads-order.test.ts', 'test/access/reported-keys.test.ts', 'test/keys/leaked-keys-cost.http.test.ts', 'test/key-holder/free-reads.http.test.ts']
  },
  'audit-rules': {
    // The entry rules and the chain of src/audit/audit.rules.ts with their unit tests only
    // (auditDraftsOf for each event type and endpoint change; the canonical JSON, hash and walk),
    // no database: under a second a run. Narrower than `audit`, whose HTTP tests (8 s each, and
    // every module-level mutant, the field patterns, runs them all) write the same entries
    // through the API.
    mutate: ['src/audit/audit.rules.ts'],
    timeoutMS: 5000,
    tests: ['test/audit/audit-rules.test.ts', 'test/audit/audit-chain.test.ts']
  },
  'fair-slots': {
    // Issue 48's guard code of the webhooks, narrower than `webhooks`: the dispatcher's slots (each
    // endpoint's and each key holder's share, counted at the claim and released when an attempt
    // ends) and the replay and recovery caps (per request, per key holder and hour). The unit
    // tests first (the service on a stand-in store; the dispatcher on a stand-in store with a real
    // receiver holding each attempt: about a second each), the store contract's replay tests
    // (SQLite), then the HTTP tests of fairness, owners and settling. Mutate it with `--mutate` to
    // the lines of those rules: the whole of dispatcher.ts is
    // the `webhooks` part's (an hour and more).
    mutate: ['src/webhooks/dispatcher.ts', 'src/webhooks/webhooks.service.ts'],
    timeoutMS: 10000,
    nodeArgs: ['--test-timeout=30000'],
    tests: [
      'test/webhooks/replay-limits.test.ts', 'test/webhooks/dispatcher-slots.test.ts',
      'test/webhooks/dispatcher-rules.test.ts',
      'test/webhooks/store.test.ts', 'test/webhooks/fairness.http.test.ts', 'test/webhooks/owners.http.test.ts', 'test/webhooks/settle.http.test.ts'
    ]
  },
  batch: {
    // PostgreSQL's group commit (storage/postgres/batch.ts: orders, webhook attempt records): how
    // calls form batches, a failed batch's calls, and the next batch sent before the settled
    // one's callers are answered, against a real pool. A few seconds a run.
    mutate: ['src/storage/postgres/batch.ts'],
    timeoutMS: 10000,
    tests: ['test/storage/postgres/order-batch.test.ts']
  },
  connections: {
    // The connection guard's rules driven by hand only (stand-in sockets, a mocked clock, a few
    // seconds a run), narrower than `transport`, whose real-socket tests take a minute a survivor.
    mutate: ['src/transport/connections.ts'],
    timeoutMS: 5000,
    tests: ['test/transport/connection-guard.test.ts', 'test/transport/connections-choice.test.ts', 'test/transport/refusal-lane.test.ts']
  },
  transport: {
    // The connection guard (src/transport/connections.ts): the fair caps and their refusal lane,
    // the answer deadline and the first-request grace (issue 48 items 1 and 9). Its rules driven
    // by hand first (stand-in sockets, a mocked clock: under two seconds a run), then the same
    // over real sockets on servers made in process (the burst of 1,100 connections of
    // answer-deadline takes about 10 s), then the server tests of Node's own errors (the top of
    // the file). Not listed: busy-connections.test.ts, whose server is a child process (it
    // covers nothing for Stryker).
    mutate: ['src/transport/connections.ts'],
    timeoutMS: 10000,
    nodeArgs: ['--test-timeout=60000'],
    tests: ['test/transport/connection-guard.test.ts', 'test/transport/refusal-lane.test.ts', 'test/transport/address-burst.test.ts', 'test/transport/answer-deadline.test.ts', 'test/server/slow-clients.test.ts', 'test/transport/deadlines.test.ts']
  }
}

function main (args: string[]): number {
  const [name, ...rest] = args
  const part = name === undefined ? undefined : PARTS[name]
  if (part === undefined) {
    process.stderr.write(`usage: npm run mutate -- PART [stryker flags]\nparts: ${Object.keys(PARTS).join(', ')}\n`)
    return 2
  }
  const bin = installTool('mutate')
  mkdirSync('.stryker', { recursive: true })
  const config = {
    $schema: '../tools/mutate/node_modules/@stryker-mutator/core/schema/stryker-schema.json',
    testRunner: 'tap',
    tap: { testFiles: part.tests, nodeArgs: ['--test-reporter=tap', ...(part.nodeArgs ?? [])] },
    checkers: [],
    coverageAnalysis: 'perTest',
    mutate: part.mutate,
    concurrency: 2,
    // A test file that spawns servers can take a while on two busy cores.
    timeoutMS: part.timeoutMS ?? 30000,
    timeoutFactor: 2.5,
    // The first run of every test file, to see what each covers; Stryker's 5 minutes were too few
    // for a part's HTTP tests on two cores shared with other runs.
    dryRunTimeoutMinutes: 20,
    incremental: true,
    incrementalFile: `.stryker/incremental-${name}.json`,
    reporters: ['clear-text', 'progress-append-only', 'json'],
    jsonReporter: { fileName: `.stryker/report-${name}.json` },
    clearTextReporter: { allowColor: false, logTests: false, reportMutants: true, reportScoreTable: true },
    // A sandbox per part, so that two parts can run at once (each at concurrency 1 on a shared
    // machine) without one clearing the other's.
    tempDirName: `.stryker/tmp-${name}`,
    cleanTempDir: 'always',
    // The sandbox needs no copy of the packages: they are linked (the project's; Stryker's own,
    // under tools/, are not needed there). docs/openapi.json stays: the CLI tests compare
    // `petstore openapi` with it byte for byte; docs/api.md too: the key format test reads the
    // pattern it publishes.
    ignorePatterns: ['data', 'bench/results', '.tmp', 'docs/*', '!docs/openapi.json', '!docs/api.md', '.stryker', 'tools'],
    thresholds: { high: 90, low: 85, break: null }
  }
  const file = join('.stryker', `stryker-${name}.config.json`)
  writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`)
  // The tap runner starts each test file with spawn('node', …), found on PATH: this Node (the
  // pinned 24, which runs .ts) goes first, so no test file ever runs on a machine's older node.
  const result = spawnSync(join(bin, 'stryker'), ['run', file, ...rest], {
    stdio: 'inherit',
    env: { ...process.env, PATH: pinnedNodePath(), CI: process.env.CI ?? '' }
  })
  return result.status ?? 1
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = main(process.argv.slice(2))
