// Which requests the access check decides, and what it answers when the request target itself is
// wrong (docs/product.md sections 3 and 4). The HTTP hook (http/access.ts) asks these and only
// turns their answers into headers and errors.
//
// The guard decides on what the router matched, never on the text of the URL: the router
// decodes the path (and takes the path of an absolute-form target), so `/v%31/admin/keys` and
// `GET http://host/v1/admin/keys` match the /v1 route, and a route that declares a role is
// always checked. isApiPath (shared/api-path.ts) only decides whether a request that matched no
// role-bearing route (a 404, a 405, a preflight, a malformed URL) is charged and gets the
// rate-limit headers.
//
// One canonical form: percent-escapes and absolute-form targets are routed, and guarded, like
// the plain path; a path with an empty segment (a trailing or doubled slash) under /v1 is not an
// operation's path, so it is charged and answered 404 whatever route it would happen to fit.
import type { Role } from '../accounts/plans.ts'
import { AppError } from '../errors.ts'
import { ABSOLUTE_FORM, isApiPath } from '../shared/api-path.ts'
import type { AccessOutcome } from './access.service.ts'

const statusOf = (error: Error): number | undefined => (error as Partial<AppError>).status

/** Whether the access check decides the request: every operation that names a role, and anything else under /v1. */
export const isGuarded = (role: Role | undefined, url: string): boolean => role !== undefined || isApiPath(url)

/** A CORS preflight: an OPTIONS request that matched no operation (an operation of its own is checked like any). */
export const isPreflight = (method: string, role: Role | undefined): boolean => method === 'OPTIONS' && role === undefined

/**
 * What to answer instead of serving, or null to serve: a 429 first (a limited client learns it
 * whatever it sent), then 404 for a path with an empty segment, then the service's refusal (400
 * for a key in the URL, 401, 403, or the failure to read the key).
 */
export function refusalFor (outcome: Pick<AccessOutcome, 'refusal'>, url: string): Error | null {
  const { refusal } = outcome
  if (refusal !== null && statusOf(refusal) === 429) return refusal
  if (hasEmptySegment(url)) return emptySegment()
  return refusal
}

/** Whether a refusal asks for a key (401): the hook adds the challenge. */
export const asksForKey = (refusal: Error): boolean => statusOf(refusal) === 401

const emptySegment = (): AppError => new AppError('not_found', 'no operation at this path: paths have no empty segment (no trailing or doubled slash); see /openapi.json')

/** A URL that never reached routing (bad percent-encoding, an over-long segment): 400. */
export const malformedUrl = (): AppError => new AppError('validation_failed', 'the request URL is malformed (bad percent-encoding or an over-long path segment)')

/** The answer to a malformed URL under /v1, charged like any request: its 429 if limited, else the 400. */
export function malformedUrlRefusal (outcome: Pick<AccessOutcome, 'refusal'>): Error {
  const { refusal } = outcome
  return refusal !== null && statusOf(refusal) === 429 ? refusal : malformedUrl()
}

/** A trailing or doubled slash in the path of a request target (the query is not looked at). */
export function hasEmptySegment (url: string): boolean {
  let start = 0
  if (url.charCodeAt(0) !== 47) { // not '/': maybe absolute-form
    const authority = ABSOLUTE_FORM.exec(url)
    if (authority !== null) start = authority[0].length
  }
  let end = url.length
  for (let i = start; i < url.length; i++) {
    const c = url.charCodeAt(i)
    if (c === 63 || c === 35) { end = i; break } // ? #
  }
  const path = start === 0 && end === url.length ? url : url.slice(start, end)
  return path.includes('//') || (path.length > 1 && path.endsWith('/'))
}
