// Operation lifecycle: declared once next to the route, everything else derived from it.
export type Stability = 'stable' | 'beta' | 'experimental'

export interface Lifecycle {
  stability: Stability
  /** Why the operation is beta or experimental: goes into its description. */
  note?: string
  /** When it was deprecated (Deprecation header, RFC 9745). */
  deprecatedAt?: Date
  /** When it stops working (Sunset header, RFC 8594; 410 afterwards). */
  sunsetAt?: Date
  /** The operation to use instead, as a path template under the base URL, e.g. '/v1/pets'. */
  successor?: { method: string; path: string; operationId: string }
}

/** The lifecycle GET /pets/{petId} has: deprecated by its successor GET /pets, with a sunset. */
export function deprecatedOperation (deprecatedAt: Date, sunsetAt: Date, successor: Lifecycle['successor']): Lifecycle {
  return { stability: 'stable', deprecatedAt, sunsetAt, ...(successor !== undefined && { successor }) }
}

const day = (date: Date): string => date.toISOString().slice(0, 10)

/** The badges and text of an operation's lifecycle, as the document shows them. */
export function lifecycleDocument<S extends Record<string, unknown>> (schema: S, lifecycle: Lifecycle | undefined): S {
  if (lifecycle === undefined) return schema
  const result: Record<string, unknown> = { ...schema }
  const badges: { name: string; label: string; color: string; position: 'before' | 'after' }[] = []
  const notes: string[] = []
  if (lifecycle.stability !== 'stable') {
    const label = lifecycle.stability === 'beta' ? 'Beta' : 'Experimental'
    badges.push({ name: label, label, color: lifecycle.stability === 'beta' ? '#1d70b8' : '#d4351c', position: 'after' })
    if (lifecycle.stability === 'experimental') result['x-scalar-stability'] = 'experimental'
    notes.push(`**${label}.** ${lifecycle.note ?? ''}`.trim())
  }
  if (lifecycle.deprecatedAt !== undefined) {
    result.deprecated = true
    const sunset = lifecycle.sunsetAt === undefined ? '' : ` It stops working on ${day(lifecycle.sunsetAt)} (sunset ${lifecycle.sunsetAt.toISOString()}); after that it answers \`410 operation_sunset\`.`
    const successor = lifecycle.successor === undefined
      ? ''
      : ` Use \`${lifecycle.successor.method} ${lifecycle.successor.path}\` (\`${lifecycle.successor.operationId}\`) instead.`
    notes.push(`**Deprecated** since ${day(lifecycle.deprecatedAt)}.${sunset}${successor} Every response carries the \`Deprecation\`, \`Sunset\`, \`Warning\` and \`Link\` headers.`)
    badges.push({
      name: lifecycle.sunsetAt === undefined ? 'Deprecated' : `Sunset ${day(lifecycle.sunsetAt)}`,
      label: lifecycle.sunsetAt === undefined ? 'Deprecated' : `Sunset ${day(lifecycle.sunsetAt)}`,
      color: '#b58105',
      position: 'after'
    })
  }
  if (badges.length > 0) result['x-badges'] = badges
  const description = typeof schema.description === 'string' ? schema.description : ''
  result.description = [...notes, description].filter((p) => p !== '').join('\n\n')
  return result as S
}

/** RFC 9745 Deprecation: a structured-field date, `@` and Unix seconds. */
export const deprecationHeader = (date: Date): string => `@${Math.floor(date.getTime() / 1000)}`

export interface LifecycleHeaderOptions {
  /** The URL of the human-readable deprecation notice (rel="deprecation"). */
  docsUrl: string
}

/** The headers every response of a deprecated operation carries, errors included. */
export function lifecycleHeaders (lifecycle: Lifecycle, options: LifecycleHeaderOptions): Record<string, string> {
  const headers: Record<string, string> = {}
  if (lifecycle.deprecatedAt === undefined) return headers
  headers.deprecation = deprecationHeader(lifecycle.deprecatedAt)
  const links = [`<${options.docsUrl}>; rel="deprecation"; type="text/html"`]
  if (lifecycle.successor !== undefined) links.unshift(`<${lifecycle.successor.path}>; rel="successor-version"`)
  headers.link = links.join(', ')
  if (lifecycle.sunsetAt !== undefined) {
    headers.sunset = lifecycle.sunsetAt.toUTCString() // RFC 8594: an HTTP-date (IMF-fixdate)
    const stopsOn = `${day(lifecycle.sunsetAt)} (${lifecycle.sunsetAt.toISOString()})`
    headers.warning = `299 - "Deprecated: this operation stops working on ${stopsOn}; use ${lifecycle.successor?.method ?? ''} ${lifecycle.successor?.path ?? 'its successor'} instead"`.replace('use  ', 'use ')
  } else {
    headers.warning = '299 - "Deprecated: this operation will be removed"'
  }
  return headers
}
