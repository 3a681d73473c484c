// HTTP mechanics shared by the resource routes: ETag/If-Match, Idempotency-Key, Link.
import { createHash } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { AppError } from '../errors.ts'
import { IDEMPOTENCY_KEY_PATTERN } from '../shared/schemas.ts'
import type { IdempotencyClaim, IfMatch } from '../shared/store.ts'

/** A record's ETag is its version: strong, and it changes whenever the row changes. */
export const etagOf = (record: { version: number }): string => `"${record.version}"`

/** Parses If-Match (RFC 9110 13.1.1) into the versions it accepts; see IfMatch. */
export function ifMatchOf (request: FastifyRequest): IfMatch {
  const header = request.headers['if-match']
  if (header === undefined) return null
  const text = Array.isArray(header) ? header.join(',') : header
  if (text.trim() === '*') return null
  const versions: number[] = []
  for (const part of text.split(',')) {
    const match = /^\s*"([1-9][0-9]{0,15})"\s*$/.exec(part) // weak tags (W/"…") never match strongly
    if (match !== null) versions.push(Number(match[1]))
  }
  return versions
}

const IDEMPOTENCY_KEY = new RegExp(IDEMPOTENCY_KEY_PATTERN)

/**
 * The Idempotency-Key claim of a create, or null without the header. The fingerprint binds the
 * key to this operation and this body, so a reuse with anything else is refused (409).
 */
export function idempotencyClaimOf (request: FastifyRequest, now: number): IdempotencyClaim | null {
  const key = request.headers['idempotency-key']
  if (key === undefined) return null
  if (typeof key !== 'string' || !IDEMPOTENCY_KEY.test(key)) {
    throw new AppError('validation_failed', 'Idempotency-Key must be 1 to 255 visible ASCII characters', { details: [{ path: 'Idempotency-Key', message: 'must be 1 to 255 visible ASCII characters' }] })
  }
  const fingerprint = createHash('sha256')
    .update(request.routeOptions.url ?? '')
    .update('\n')
    .update(JSON.stringify(request.body))
    .digest('base64url')
  // Claims belong to the caller's identity: a retry through a rotated key's successor replays.
  return { scope: request.principal === null ? 'anonymous' : request.principal.caller.subject, key, fingerprint, now }
}

/**
 * Sets Link: rel="next" keeping the request's own query, with the new cursor. The link is a
 * relative reference (RFC 8288 3.1: resolved against the URL the client used, so it stays right
 * behind a proxy) whose path is the route's own template with its parameters filled in from the
 * validated params (`/admin/keys/:keyId/requests`), never the request's spelling of it: an
 * absolute-form target (`GET http://evil.example/v1/pets`) or a path beginning `//` would
 * otherwise make it a link to another host.
 */
export function setNextLink (request: FastifyRequest, reply: FastifyReply, nextCursor: string | null): void {
  if (nextCursor === null) return
  const params = (request.params ?? {}) as Record<string, unknown>
  const path = (request.routeOptions.url ?? '/')
    .replace(/:(\w+)/g, (whole, name: string) => name in params ? encodeURIComponent(String(params[name])) : whole)
  const query = request.url.indexOf('?')
  const search = new URLSearchParams(query === -1 ? '' : request.url.slice(query + 1))
  search.set('cursor', nextCursor)
  reply.header('link', `<${path}?${search.toString()}>; rel="next"`)
}
