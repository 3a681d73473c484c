// A tool call's result, made from the answer of the operation it ran (mcp.routes.ts): what REST
// says in headers an agent never sees is put in the structured content, and in a text line
// beside its JSON: the next page's cursor (Link), the version (ETag), the windows and the wait of
// a refusal (RateLimit, Retry-After), the notice of a deprecated operation (Deprecation, Sunset,
// Warning, Link rel="successor-version"). output-schema.ts describes the same shape.

type Headers = Record<string, unknown>

/** A tool result as the SDK's server sends it. */
export interface ToolResult {
  [key: string]: unknown
  content: Array<{ type: 'text'; text: string }>
  structuredContent: Record<string, unknown>
  isError?: true
}

const text = (value: unknown): string | undefined => typeof value === 'string' ? value : undefined

/** The cursor of the `Link: <…>; rel="next"` of a list's answer (routing/conditional.ts sets it). */
export function nextCursorOf (headers: Headers): string | undefined {
  const link = text(headers.link)
  if (link === undefined) return undefined
  for (const part of link.split(',')) {
    const match = /^\s*<([^>]*)>\s*;(.*)$/.exec(part)
    if (match === null || !/\brel="?next"?/.test(match[2]!)) continue
    const cursor = new URL(match[1]!, 'http://relative.invalid').searchParams.get('cursor')
    if (cursor !== null) return cursor
  }
  return undefined
}

/** The notice of a deprecated operation's answer, from its lifecycle headers (routing/lifecycle.ts). */
export function deprecationOf (headers: Headers): Record<string, string> | undefined {
  const since = /^@(\d+)$/.exec(text(headers.deprecation) ?? '')
  if (since === null) return undefined
  const notice: Record<string, string> = {
    since: new Date(Number(since[1]) * 1000).toISOString(),
    // Warning: 299 - "text"
    notice: /"(.*)"/.exec(text(headers.warning) ?? '')?.[1] ?? 'This operation is deprecated.'
  }
  const sunset = Date.parse(text(headers.sunset) ?? '')
  if (Number.isFinite(sunset)) notice.sunset = new Date(sunset).toISOString()
  const successor = /<([^>]*)>\s*;\s*rel="?successor-version"?/.exec(text(headers.link) ?? '')?.[1]
  if (successor !== undefined) notice.successor = successor
  return notice
}

/** What an agent can act on in a refusal: the error object, and for a 429 or 503 when and which window. */
export function refusalContent (status: number, body: unknown, headers: Headers): Record<string, unknown> {
  const error = (body as { error?: unknown } | null)?.error ?? body
  const out: Record<string, unknown> = { status, error }
  if (status === 429 || status === 503) {
    const retryAfter = Number(headers['retry-after'])
    if (Number.isFinite(retryAfter)) out.retryAfter = retryAfter
    const windows: Record<string, { remaining: number; reset: number }> = {}
    for (const part of String(headers.ratelimit ?? '').split(',')) {
      const match = /"(\w+)";r=(\d+);t=(\d+)/.exec(part.trim())
      if (match !== null) windows[match[1]!] = { remaining: Number(match[2]), reset: Number(match[3]) }
    }
    if (Object.keys(windows).length > 0) {
      out.windows = windows
      const exhausted = Object.entries(windows).find(([, w]) => w.remaining === 0)
      if (exhausted !== undefined) out.exhaustedWindow = exhausted[0]
    }
  }
  return out
}

/**
 * The result of a refusal: `isError`, the refusal as structured content and as JSON text, and a
 * deprecated operation's notice (REST sends its headers on refusals too).
 */
export function refusalResult (content: Record<string, unknown>, headers: Headers = {}): ToolResult {
  const deprecation = deprecationOf(headers)
  const structured = deprecation === undefined ? content : { ...content, deprecation }
  return { isError: true, content: textOf(structured, undefined, deprecation), structuredContent: structured }
}

/** The result of an operation that answered 2xx. */
export function answerResult (tool: string, status: number, body: unknown, headers: Headers): ToolResult {
  const nextCursor = nextCursorOf(headers)
  const deprecation = deprecationOf(headers)
  const structured: Record<string, unknown> = {
    status,
    ...(typeof headers.etag === 'string' && { etag: headers.etag }),
    data: body,
    ...(nextCursor !== undefined && { nextCursor }),
    ...(deprecation !== undefined && { deprecation })
  }
  const more = nextCursor === undefined
    ? undefined
    : `Next page: call ${tool} again with cursor ${JSON.stringify(nextCursor)} and the same other arguments.`
  return { content: textOf(structured, more, deprecation), structuredContent: structured }
}

/**
 * The text content: the structured content as JSON first (for clients that read only text), then
 * a line for each thing to act on.
 */
function textOf (
  structured: Record<string, unknown>,
  more: string | undefined,
  deprecation: Record<string, string> | undefined
): ToolResult['content'] {
  const lines = [JSON.stringify(structured)]
  if (more !== undefined) lines.push(more)
  if (deprecation !== undefined) {
    lines.push(`DEPRECATED: ${deprecation.notice}${deprecation.successor === undefined ? '' : ` (successor: ${deprecation.successor})`}`)
  }
  return lines.map((line) => ({ type: 'text' as const, text: line }))
}
