// The rules of reading a key's request log: the key's requests only, newest first, with the
// filters of the query; what this instance recorded and has not yet written is flushed first, so
// a request just answered is found by its Request-Id. The key holder reads its own key's log; an
// admin reads any key's, a revoked or expired one's too (the key must exist: else not_found).
import type { KeyStore } from '../accounts/keys.store.ts'
import { notFound } from '../errors.ts'
import { isStorableId } from '../shared/schemas.ts'
import { pageRequest, toPage, type Page } from '../shared/pagination.ts'
import type { KeyRequestListQuery } from './key-requests.schema.ts'
import type { RequestRecorder } from './key-requests.recorder.ts'
import type { KeyRequestFilter, KeyRequestStore, StoredKeyRequest } from './key-requests.store.ts'

export interface KeyRequestService {
  /** The log of the caller's own key (its id from the principal: it exists). */
  list (keyId: number, query: KeyRequestListQuery): Promise<Page<StoredKeyRequest>>
  /** Any key's log, for an admin: not_found when no key has this id. */
  listOfKey (keyId: number, query: KeyRequestListQuery): Promise<Page<StoredKeyRequest>>
}

/** `429` is one status, `4xx` its class. */
export function statusRange (status: string): { from: number; to: number } {
  if (status.endsWith('xx')) {
    const from = Number(status[0]) * 100
    return { from, to: from + 99 }
  }
  return { from: Number(status), to: Number(status) }
}

export function createKeyRequestService (
  store: KeyRequestStore,
  recorder: RequestRecorder | null,
  keys: Pick<KeyStore, 'getKey'>
): KeyRequestService {
  async function list (keyId: number, query: KeyRequestListQuery): Promise<Page<StoredKeyRequest>> {
    // A failed flush keeps its batch (key-requests.recorder.ts): the log is then read as it is.
    if (recorder !== null) await recorder.flush().catch(() => {})
    const filter: KeyRequestFilter = {
      ...(query.status !== undefined && { status: statusRange(query.status) }),
      ...(query.code !== undefined && { code: query.code }),
      ...(query.operationId !== undefined && { operationId: query.operationId }),
      ...(query.requestId !== undefined && { requestId: query.requestId })
    }
    const page = pageRequest(query)
    return toPage(await store.list(keyId, filter, page.afterId, page.limit), page)
  }
  return {
    list,
    async listOfKey (keyId, query) {
      // A key with no request yet has an empty log; an id no key has is not found, as for its usage.
      const record = isStorableId(keyId) ? await keys.getKey(keyId) : null
      if (record === null) throw notFound(`key ${keyId}`)
      return await list(keyId, query)
    }
  }
}
