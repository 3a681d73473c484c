// The key holder's shapes (docs/product.md 9.11). A holder reads its key through the admin's own
// views (keys/keys.schema.ts), imported as they are: one key, one shape, whoever reads it. Only
// the headers particular to these answers are declared here.
import { Type } from 'typebox'
import { StringEnum } from '../shared/schemas.ts'

export { ApiKeySchema, CreatedApiKeySchema, KeyBansSchema, KeyUsageQuery, KeyUsageSchema, RotateApiKeySchema } from '../keys/keys.schema.ts'

/** A banned key is still served its view and ban history; this says how long the ban lasts. */
export const BanRetryAfterHeader = {
  'retry-after': Type.Integer({ description: 'Sent only while the key is banned (this read is served and charged nothing): whole seconds until the ban ends.' })
}

/** Key records and new keys are never kept by a cache, as on key administration. */
export const NoStoreHeader = {
  'Cache-Control': StringEnum(['no-store'] as const, { description: 'Always `no-store`: key records and new keys must not be kept by any cache.' })
}
