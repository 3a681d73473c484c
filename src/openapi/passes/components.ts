// Pass: named components. A TypeBox schema with a `title` (shared/schemas.ts: the title is
// the public name of the shape) becomes components.schemas[title], and every place it occurs
// becomes a $ref to it, so generated clients get one named type per shape.
import type { JsonObject, OpenApiDocument } from '../types.ts'

/** Replaces every schema with a `title` by a $ref to components.schemas[title], innermost first. */
export function hoistComponents (doc: OpenApiDocument): void {
  const schemas: Record<string, JsonObject> = (doc.components.schemas ??= {})
  const visit = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(visit)
    if (node === null || typeof node !== 'object') return node
    const object: JsonObject = {}
    for (const [key, value] of Object.entries(node)) object[key] = visit(value)
    const title = object.title
    if (typeof title === 'string' && (object.type !== undefined || object.enum !== undefined)) {
      // The first occurrence defines the component; later ones must be the same shape.
      schemas[title] ??= { ...object }
      return { $ref: `#/components/schemas/${title}` }
    }
    return object
  }
  doc.paths = visit(doc.paths) as OpenApiDocument['paths']
  // A component's body is its shape; the title became its name.
  for (const schema of Object.values(schemas)) delete schema.title
  doc.components.schemas = Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => a.localeCompare(b)))
}
