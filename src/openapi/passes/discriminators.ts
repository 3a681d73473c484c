// Pass: discriminator mappings. Runs after hoistComponents: it reads the branches' $refs.
import type { JsonObject, OpenApiDocument } from '../types.ts'

/**
 * A discriminator (the key's `plan`) gets its mapping from the branches' enums: without one,
 * OpenAPI takes the schema names as the values, and generators would type `plan` as
 * "NewPlanApiKey". The validator (Ajv) refuses a mapping, so only the document has it.
 */
export function addDiscriminatorMappings (doc: OpenApiDocument): void {
  const schemas = doc.components.schemas ?? {}
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) { node.forEach(visit); return }
    if (node === null || typeof node !== 'object') return
    const object = node as JsonObject
    const discriminator = object.discriminator as { propertyName: string; mapping?: Record<string, string> } | undefined
    if (discriminator !== undefined && Array.isArray(object.oneOf)) {
      const mapping: Record<string, string> = {}
      for (const branch of object.oneOf as { $ref?: string }[]) {
        const ref = branch.$ref
        const target = ref === undefined ? undefined : schemas[ref.split('/').pop()!]
        const properties = target?.properties as Record<string, { enum?: string[] }> | undefined
        const tag = properties?.[discriminator.propertyName]
        for (const value of tag?.enum ?? []) mapping[value] = ref!
      }
      discriminator.mapping = mapping
    }
    for (const value of Object.values(object)) visit(value)
  }
  visit(doc.paths)
  visit(schemas)
}
