// A real OTLP/HTTP endpoint for tests: a node:http server on 127.0.0.1 that takes what an
// exporter sends to /v1/traces as http/json and keeps each span, flattened.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { TestContext } from 'node:test'

export interface ReceivedSpan {
  traceId: string
  spanId: string
  parentSpanId: string
  name: string
  kind: number
  attributes: Record<string, unknown>
  events: Array<{ name: string; attributes: Record<string, unknown> }>
  links: Array<{ traceId: string; spanId: string }>
  /** Unix nanoseconds as OTLP sends them (decimal text: BigInt() them to compare). */
  startTime: string
  endTime: string
  /** The span's status: code 0 unset, 1 ok, 2 error. */
  status: { code: number; message: string }
  resource: Record<string, unknown>
}

interface OtlpKeyValue { key: string; value: Record<string, unknown> }
interface OtlpSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind: number
  attributes?: OtlpKeyValue[]
  events?: Array<{ name: string; attributes?: OtlpKeyValue[] }>
  links?: Array<{ traceId: string; spanId: string }>
  status?: { code?: number; message?: string }
  startTimeUnixNano?: string
  endTimeUnixNano?: string
}
interface OtlpExport {
  resourceSpans: Array<{ resource?: { attributes?: OtlpKeyValue[] }; scopeSpans: Array<{ spans: OtlpSpan[] }> }>
}

export async function startOtlpReceiver (t: TestContext): Promise<{
  url: string
  spans: ReceivedSpan[]
  contentTypes: string[]
}> {
  const spans: ReceivedSpan[] = []
  const contentTypes: string[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      contentTypes.push(`${req.method} ${req.url} ${req.headers['content-type']}`)
      if (req.url === '/v1/traces' && req.headers['content-type'] === 'application/json') {
        const body = JSON.parse(Buffer.concat(chunks).toString()) as OtlpExport
        for (const { resource, scopeSpans } of body.resourceSpans) {
          for (const { spans: list } of scopeSpans) {
            for (const s of list) {
              spans.push({
                traceId: s.traceId,
                spanId: s.spanId,
                parentSpanId: s.parentSpanId ?? '',
                name: s.name,
                kind: s.kind,
                attributes: flatten(s.attributes),
                events: (s.events ?? []).map((e) => ({ name: e.name, attributes: flatten(e.attributes) })),
                links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
                startTime: s.startTimeUnixNano ?? '0',
                endTime: s.endTimeUnixNano ?? '0',
                status: { code: s.status?.code ?? 0, message: s.status?.message ?? '' },
                resource: flatten(resource?.attributes)
              })
            }
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => new Promise<void>((resolve) => { server.close(() => resolve()) }))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, contentTypes }
}

/** OTLP's typed values ({ stringValue }, { intValue }, { boolValue } …) as plain values; int64s come as strings. */
function flatten (attributes: OtlpKeyValue[] | undefined): Record<string, unknown> {
  return Object.fromEntries((attributes ?? []).map(({ key, value }) => {
    const [kind, v] = Object.entries(value)[0] ?? ['', undefined]
    return [key, kind === 'intValue' ? Number(v) : v]
  }))
}
