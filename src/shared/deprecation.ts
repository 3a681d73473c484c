// A deprecated operation, as the routes declare it (http/lifecycle-hooks.ts collects them) and
// the console's deprecation report reads it (keys/keys.service.ts): here, so that neither of
// http/ and keys/ imports the other.

export interface DeprecatedOperation {
  operationId: string
  method: string
  /** The path template as the document writes it: /v1/pets/{petId}. */
  path: string
  deprecatedAt: Date
  sunsetAt?: Date
  successor?: { method: string; path: string; operationId: string }
}
