// Opaque keyset cursors. A cursor carries the last id of the page it ends; the next page starts
// after it, so a page costs one index range scan whatever the table's size, and rows added or
// removed meanwhile never shift a page (no duplicates, no gaps, unlike OFFSET).
import { AppError } from '../errors.ts'
import type { PageRequest } from './store.ts'

export const DEFAULT_PAGE_SIZE = 20

export function encodeCursor (lastId: number): string {
  return Buffer.from(`v1:${lastId}`).toString('base64url')
}

export function decodeCursor (cursor: string | undefined): number | null {
  if (cursor === undefined) return null
  const text = /^[A-Za-z0-9_-]{1,100}$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString() : ''
  const match = /^v1:(0|[1-9][0-9]{0,15})$/.exec(text)
  const id = match === null ? NaN : Number(match[1])
  if (!Number.isSafeInteger(id)) {
    throw new AppError('validation_failed', 'invalid cursor: use the one from the Link header of the previous page', { details: [{ path: 'cursor', message: 'is not a cursor this API issued' }] })
  }
  return id
}

export function pageRequest (query: { limit?: number; cursor?: string }): PageRequest {
  // One row more than asked tells whether a next page exists without a COUNT.
  return { afterId: decodeCursor(query.cursor), limit: (query.limit ?? DEFAULT_PAGE_SIZE) + 1 }
}

export interface Page<T> { items: T[]; nextCursor: string | null }

export function toPage<T extends { id: number }> (rows: T[], page: PageRequest): Page<T> {
  const size = page.limit - 1
  if (rows.length <= size) return { items: rows, nextCursor: null }
  const items = rows.slice(0, size)
  return { items, nextCursor: encodeCursor(items[items.length - 1]!.id) }
}
