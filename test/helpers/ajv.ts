// ajv-formats for the tests' own Ajv instances (the response gate, the examples check). It is
// CommonJS with a default export; under Node's ESM loader it arrives wrapped, so it is unwrapped
// here once (src/http/validation.ts does the same for the server, which never imports from test/).
import addFormatsModule, { type FormatsPlugin } from 'ajv-formats'

export const addFormats = (
  (addFormatsModule as unknown as { default?: FormatsPlugin }).default ?? addFormatsModule
) as FormatsPlugin
