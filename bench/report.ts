// What a run found, as rows: the figures of each scenario, its ratio to bare node:http, the
// issue's target for it and whether this run met it; printed as a table and saved as JSON and
// Markdown. Targets are reported, never asserted: on a shared machine a missed target is a
// measurement, not a failure. Only errors and non-2xx answers fail a run.
import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { mergedQuantileMs, type Measured, type Part, type Slice } from './load.ts'
import type { ScenarioId } from './options.ts'

export type SetupId = 'sqlite' | 'postgres' | 'redis'

export const SETUP_TITLES: Record<SetupId, string> = {
  sqlite: 'SQLite',
  postgres: 'PostgreSQL',
  redis: 'SQLite + Redis limiter'
}

export interface Row {
  setup: SetupId | 'bare'
  scenario: ScenarioId | 'bare' | 'all'
  title: string
  status: 'ok' | 'failed' | 'skipped'
  reason?: string
  note?: string
  requests: number
  reqPerSec: number | null
  /** For the mixed run, the reads'. */
  p50Ms: number | null
  p99Ms: number | null
  /** Median over the rounds of (req/s / the bare server's req/s in the same round). */
  ratio: number | null
  /** The smallest and largest per-round ratio: how much the machine moved. */
  ratioRange: [number, number] | null
  /** The machine's 1-minute load average when the scenario started: how busy the others kept it. */
  loadAverage?: number
  /** Mixed run only. */
  mixed?: { readsPerSec: number; ordersPerSec: number; ordersShare: number; ordersP99Ms: number | null }
  target: string | null
  /** Whether this run met the target; null where the row has none. */
  met: boolean | null
}

export interface Memory {
  setup: SetupId
  startMiB: number | null
  afterMiB: number | null
  target: string | null
  met: boolean | null
}

/**
 * The targets of issue 10, for the setup a new user gets (SQLite, in-process limiter, LOG_LEVEL
 * info). The PostgreSQL and Redis rows are there to compare, without targets of their own.
 */
const TARGETS: Partial<Record<ScenarioId, { ratio?: number; p99Ms?: number; text: string }>> = {
  get: { ratio: 0.6, p99Ms: 5, text: '>= 0.6x, p99 < 5 ms' },
  id: { ratio: 0.6, p99Ms: 5, text: '>= 0.6x, p99 < 5 ms' },
  rate_limit: { ratio: 0.7, text: '>= 0.7x' },
  orders: { ratio: 0.2, text: '>= 0.2x' },
  mixed: { p99Ms: 10, text: 'reads p99 < 10 ms' }
}
const RSS_TARGET = { startMiB: 100, afterMiB: 150, text: '< 100 MiB at start, < 150 MiB after' }

export function median (values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

const sum = (values: number[]): number => values.reduce((a, b) => a + b, 0)

function sumPart (parts: (Part | undefined)[]): { count: number; bad: number } {
  return { count: sum(parts.map((p) => p?.count ?? 0)), bad: sum(parts.map((p) => p?.bad ?? 0)) }
}

function problems (slices: Slice[]): string[] {
  const e = { connect: 0, read: 0, write: 0, status: 0, timeout: 0 }
  for (const s of slices) for (const k of Object.keys(e) as (keyof typeof e)[]) e[k] += s.errors[k]
  const out: string[] = []
  if (sum(slices.map((s) => s.requests)) === 0) out.push('no response at all')
  if (e.status > 0) out.push(`${e.status} responses with status >= 400`)
  if (e.timeout > 0) out.push(`${e.timeout} timeouts`)
  if (e.connect + e.read + e.write > 0) out.push(`socket errors: connect ${e.connect}, read ${e.read}, write ${e.write}`)
  const reads = sumPart(slices.map((s) => s.reads))
  const orders = sumPart(slices.map((s) => s.orders))
  if (reads.bad + orders.bad > e.status) out.push(`non-2xx answers: ${reads.bad} reads, ${orders.bad} orders`)
  return out
}

/** The row of a measured scenario; failed when a single request failed. */
export function scenarioRow (setup: SetupId, scenario: { id: ScenarioId; title: string; note?: string }, measured: Measured): Row {
  const { slices, ratios } = measured
  const requests = sum(slices.map((s) => s.requests))
  const seconds = sum(slices.map((s) => s.seconds))
  const isMixed = slices.some((s) => s.reads !== undefined)
  const latency = isMixed
    ? slices.map((s) => ({ count: s.reads?.count ?? 0, latencyUs: s.reads?.latencyUs ?? [] }))
    : slices.map((s) => ({ count: s.requests, latencyUs: s.latencyUs }))
  const row: Row = {
    setup, scenario: scenario.id, title: scenario.title, status: 'ok',
    ...(scenario.note !== undefined && { note: scenario.note }),
    requests,
    reqPerSec: seconds > 0 ? requests / seconds : null,
    p50Ms: mergedQuantileMs(latency, 0.5),
    p99Ms: mergedQuantileMs(latency, 0.99),
    ratio: ratios.length > 0 ? median(ratios) : null,
    ratioRange: ratios.length > 0 ? [Math.min(...ratios), Math.max(...ratios)] : null,
    target: null,
    met: null
  }
  if (isMixed) {
    const reads = sumPart(slices.map((s) => s.reads)).count
    const orders = sumPart(slices.map((s) => s.orders)).count
    row.mixed = {
      readsPerSec: seconds > 0 ? reads / seconds : 0,
      ordersPerSec: seconds > 0 ? orders / seconds : 0,
      ordersShare: reads + orders > 0 ? orders / (reads + orders) : 0,
      ordersP99Ms: mergedQuantileMs(slices.map((s) => ({ count: s.orders?.count ?? 0, latencyUs: s.orders?.latencyUs ?? [] })), 0.99)
    }
  }
  const target = setup === 'sqlite' ? TARGETS[scenario.id] : undefined
  if (target !== undefined) {
    row.target = target.text
    row.met = (target.ratio === undefined || (row.ratio ?? 0) >= target.ratio) && (target.p99Ms === undefined || (row.p99Ms ?? Infinity) < target.p99Ms)
  }
  const wrong = problems(slices)
  return wrong.length === 0 ? row : { ...row, status: 'failed', reason: wrong.join('; ') }
}

export function bareRow (slices: Slice[]): Row {
  const requests = sum(slices.map((s) => s.requests))
  const seconds = sum(slices.map((s) => s.seconds))
  const wrong = problems(slices)
  return {
    setup: 'bare', scenario: 'bare', title: 'bare node:http, fixed JSON (the reference)', status: wrong.length === 0 ? 'ok' : 'failed',
    ...(wrong.length > 0 && { reason: wrong.join('; ') }),
    requests,
    reqPerSec: seconds > 0 ? requests / seconds : null,
    p50Ms: mergedQuantileMs(slices.map((s) => ({ count: s.requests, latencyUs: s.latencyUs })), 0.5),
    p99Ms: mergedQuantileMs(slices.map((s) => ({ count: s.requests, latencyUs: s.latencyUs })), 0.99),
    ratio: 1, ratioRange: null, target: null, met: null
  }
}

export function failedRow (setup: SetupId, scenario: { id: ScenarioId | 'all'; title: string }, reason: string, status: 'failed' | 'skipped' = 'failed'): Row {
  return { setup, scenario: scenario.id, title: scenario.title, status, reason, requests: 0, reqPerSec: null, p50Ms: null, p99Ms: null, ratio: null, ratioRange: null, target: null, met: null }
}

export function memoryRow (setup: SetupId, startBytes: number | null, afterBytes: number | null): Memory {
  const mib = (b: number | null): number | null => b === null ? null : b / 2 ** 20
  const row: Memory = { setup, startMiB: mib(startBytes), afterMiB: mib(afterBytes), target: null, met: null }
  if (setup === 'sqlite') {
    row.target = RSS_TARGET.text
    row.met = row.startMiB !== null && row.afterMiB !== null && row.startMiB < RSS_TARGET.startMiB && row.afterMiB < RSS_TARGET.afterMiB
  }
  return row
}

// ---------------------------------------------------------------------------------------------
// Output

const fmtInt = (n: number | null): string => n === null ? '-' : Math.round(n).toLocaleString('en-US')
const fmtMs = (n: number | null): string => n === null ? '-' : n < 10 ? n.toFixed(2) : n.toFixed(1)
const fmtRatio = (n: number | null): string => n === null ? '-' : `${n.toFixed(2)}x`
const fmtMet = (met: boolean | null): string => met === null ? '' : met ? 'met' : 'MISSED'

function cells (row: Row): string[] {
  const setup = row.setup === 'bare' ? '' : SETUP_TITLES[row.setup]
  const load = row.loadAverage === undefined ? '' : row.loadAverage.toFixed(1)
  if (row.status !== 'ok') return [setup, row.title, '-', '-', '-', row.status === 'skipped' ? 'skipped (below)' : 'FAILED (below)', '', row.target ?? '', '', load]
  const title = row.mixed === undefined
    ? row.title
    : `${row.title} (orders ${(row.mixed.ordersShare * 100).toFixed(0)}%, their p99 ${fmtMs(row.mixed.ordersP99Ms)} ms)`
  return [
    setup, title, fmtInt(row.reqPerSec), fmtMs(row.p50Ms), fmtMs(row.p99Ms),
    row.ratioRange === null ? '1 (reference)' : fmtRatio(row.ratio),
    row.ratioRange === null ? '' : `${fmtRatio(row.ratioRange[0])}-${fmtRatio(row.ratioRange[1])}`,
    row.target ?? '', fmtMet(row.met), load
  ]
}

const HEADER = ['setup', 'scenario', 'req/s', 'p50 ms', 'p99 ms', 'ratio to bare', 'rounds', 'target', 'met', 'load avg']
const RIGHT = [false, false, true, true, true, true, false, false, false, true]
const MEMORY_HEADER = ['server RSS', 'at start MiB', 'after the runs MiB', 'target', 'met']

function textTable (header: string[], rows: string[][], right: boolean[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  const line = (c: string[]): string => c.map((v, i) => right[i] ? v.padStart(widths[i]!) : v.padEnd(widths[i]!)).join('  ').trimEnd()
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n')
}

function markdownTable (header: string[], rows: string[][], right: boolean[]): string {
  const esc = (v: string): string => v.replaceAll('|', '\\|')
  return [
    `| ${header.map(esc).join(' | ')} |`,
    `|${right.map((r) => r ? '---:' : '---').join('|')}|`,
    ...rows.map((r) => `| ${r.map(esc).join(' | ')} |`)
  ].join('\n')
}

const memoryCells = (m: Memory): string[] => [SETUP_TITLES[m.setup], m.startMiB === null ? '-' : m.startMiB.toFixed(0), m.afterMiB === null ? '-' : m.afterMiB.toFixed(0), m.target ?? '', fmtMet(m.met)]

export interface Document {
  startedAt: string
  finishedAt: string
  commit: string | null
  machine: { node: string; platform: string; cpus: number; cpuModel: string; memoryGiB: number; loadAverageAtStart: number[]; loadAverageAtEnd: number[] }
  generator: string
  placement: string
  options: Record<string, unknown>
  rows: Row[]
  memory: Memory[]
  limiter: MicroResult[]
  notes: string[]
  ok: boolean
  failures: string[]
}

export interface MicroResult {
  backend: 'memory' | 'redis'
  inFlight: number
  status: 'ok' | 'failed' | 'skipped'
  reason?: string
  callsPerSec: number | null
  /** Mean time one call takes (for inFlight 1, the round trip itself). */
  meanUs: number | null
}

/** The notes under the table: what each row means, and why a row is missing. */
export function notesOf (rows: Row[], limiter: MicroResult[]): string[] {
  const seen = new Set<string>()
  const notes: string[] = []
  for (const r of rows) {
    if (r.status === 'ok' && r.note !== undefined && !seen.has(r.title)) { seen.add(r.title); notes.push(`${r.title}: ${r.note}`) }
  }
  for (const r of rows) if (r.status !== 'ok') notes.push(`${r.setup === 'bare' ? '' : SETUP_TITLES[r.setup] + ', '}${r.title}: ${r.status}, ${r.reason ?? ''}`)
  for (const m of limiter) if (m.status !== 'ok') notes.push(`limiter ${m.backend}: ${m.status}, ${m.reason ?? ''}`)
  return notes
}

export function renderText (doc: Document): string {
  const parts = [
    textTable(HEADER, doc.rows.map(cells), RIGHT),
    textTable(MEMORY_HEADER, doc.memory.map(memoryCells), [false, true, true, false, false])
  ]
  const micro = doc.limiter.filter((m) => m.status === 'ok')
  if (micro.length > 0) {
    parts.push(textTable(['limiter consume(), no HTTP', 'in flight', 'calls/s', 'mean µs/call'],
      micro.map((m) => [m.backend, String(m.inFlight), fmtInt(m.callsPerSec), m.meanUs!.toFixed(1)]), [false, true, true, true]))
  }
  if (doc.notes.length > 0) parts.push(doc.notes.join('\n'))
  parts.push(footer(doc))
  return parts.join('\n\n') + '\n'
}

function footer (doc: Document): string {
  return [
    'Each ratio is the median, over the rounds, of the scenario\'s req/s over the bare server\'s in the same round;',
    '"rounds" is their range. Compare ratios across machines and runs, not req/s. Targets (issue 10) apply to the',
    'default setup, SQLite with the in-process limiter; they are reported, not asserted. "load avg" is the',
    'machine\'s 1-minute load average as the scenario started.',
    `Load generator: ${doc.generator}. ${doc.placement}.`,
    `Load average at start ${doc.machine.loadAverageAtStart.join(' ')}, at end ${doc.machine.loadAverageAtEnd.join(' ')} (${doc.machine.cpus} CPUs).`
  ].join('\n')
}

export function renderMarkdown (doc: Document): string {
  const micro = doc.limiter.filter((m) => m.status === 'ok')
  return [
    `Benchmark of commit \`${doc.commit ?? 'unknown'}\`, ${doc.startedAt}: Node ${doc.machine.node}, ${doc.machine.cpus} x ${doc.machine.cpuModel}, ${doc.machine.platform}.`,
    markdownTable(HEADER, doc.rows.map(cells), RIGHT),
    markdownTable(MEMORY_HEADER, doc.memory.map(memoryCells), [false, true, true, false, false]),
    ...(micro.length > 0
      ? [markdownTable(['limiter `consume()`, no HTTP', 'in flight', 'calls/s', 'mean µs/call'], micro.map((m) => [m.backend, String(m.inFlight), fmtInt(m.callsPerSec), m.meanUs!.toFixed(1)]), [false, true, true, true])]
      : []),
    ...(doc.notes.length > 0 ? [doc.notes.map((n) => `- ${n}`).join('\n')] : []),
    footer(doc)
  ].join('\n\n') + '\n'
}

/** latest.json and latest.md in dir. */
export async function save (dir: string, doc: Document): Promise<string[]> {
  await mkdir(dir, { recursive: true })
  const json = path.join(dir, 'latest.json')
  const md = path.join(dir, 'latest.md')
  await writeFile(json, JSON.stringify(doc, null, 2) + '\n')
  await writeFile(md, renderMarkdown(doc))
  return [json, md]
}
