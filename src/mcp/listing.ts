// The input schemas as tools/list shows them. An agent pays for every byte of tools/list in its
// context (it was 103 KB for a customer key, 169 KB for an admin's): what the list shows is what an
// agent needs to build a call, and the arguments are still checked against the routes' own
// schemas, whole (arguments.ts), so a value the listed schema does not rule out is refused by name.
// Left out: examples, titles, the control-character patterns every text field carries (an agent
// does not send U+0000), int64's format and its 2^53-1 bound (JSON numbers), the decimal rule of
// path and query integers (REST's text; an agent sends numbers, and "5" is taken as 5 anyway), and
// `additionalProperties: false` (the instructions say once that unknown arguments are refused).
import { DECIMAL_RULE, HEADER_TEXT, MAX_ID, MULTILINE_TEXT, NAME_PATTERN, NO_CONTROLS } from '../shared/schemas.ts'

type JsonSchema = Record<string, unknown>

const CONTROL_PATTERNS = new Set([NO_CONTROLS, MULTILINE_TEXT, HEADER_TEXT, NAME_PATTERN])

/** A tool's input schema as listed: the same arguments, types, bounds and enumerations, without the noise above. */
export function listedInputSchema (schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(listedInputSchema)
  if (schema === null || typeof schema !== 'object') return schema
  const out: JsonSchema = {}
  for (const [name, value] of Object.entries(schema)) {
    if (name === 'properties') {
      out[name] = Object.fromEntries(Object.entries(value as object).map(([k, v]) => [k, listedInputSchema(v)]))
      continue
    }
    if (name === 'examples' || name === 'example' || name === 'title' || name.startsWith('x-')) continue
    if (name === 'pattern' && CONTROL_PATTERNS.has(value as string)) continue
    if (name === 'format' && (value === 'int64' || value === 'int32')) continue
    if (name === 'maximum' && value === MAX_ID) continue
    // Unknown arguments and body fields are refused by name all the same (instructions.ts says so).
    if (name === 'additionalProperties' && value === false) continue
    if (name === 'description' && typeof value === 'string') {
      const text = value.replace(` ${DECIMAL_RULE}`, '').replace(DECIMAL_RULE, '').trim()
      if (text !== '') out[name] = text
      continue
    }
    out[name] = listedInputSchema(value)
  }
  return out
}
