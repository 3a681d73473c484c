// Pass: examples in OpenAPI 3.0 form. The last pass: it rewrites every node of the document.
import type { JsonObject } from '../types.ts'

/**
 * OpenAPI 3.0 schemas have one `example`, not JSON Schema's `examples` array (which is where
 * the TypeBox schemas keep theirs, next to the shape, so that a new schema brings its own).
 * @fastify/swagger converts most; this catches the rest (oneOf branches, header schemas). A
 * Media Type's or Parameter's `examples` is a map, never an array, so it is left alone.
 */
export function examplesAsOpenApi30 (node: unknown): unknown {
  if (Array.isArray(node)) return node.map(examplesAsOpenApi30)
  if (node === null || typeof node !== 'object') return node
  const object: JsonObject = {}
  for (const [key, value] of Object.entries(node)) {
    if (key === 'examples' && Array.isArray(value)) {
      if (!('example' in node) && value.length > 0) object.example = value[0]
      continue
    }
    // Example values are data, not schemas: copied as they are.
    object[key] = key === 'example' ? value : examplesAsOpenApi30(value)
  }
  return object
}
