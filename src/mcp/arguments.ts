// A tool call's arguments, checked against the tool's inputSchema before the operation runs. The
// call is made over HTTP (mcp.routes.ts), and that mapping loses what an agent needs to hear: a
// missing path parameter makes a path with an empty segment (a 404 about paths), an argument
// that is no parameter would be dropped unseen. So the arguments are checked here, against the
// same schemas REST validates with (tools.ts reads them from the routes), and every problem names
// the argument; an enumeration's problem lists its values. Path and query values are coerced as
// REST coerces them (they are text on the wire: `"5"` is 5); a body is taken as it is, never
// coerced (docs/product.md 5.5), as REST takes it.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import addFormatsModule, { type FormatsPlugin } from 'ajv-formats'
import { clipText, MAX_ERROR_DETAILS } from '../errors.ts'
import type { Tool } from './tools.ts'

// ajv-formats is CommonJS with a default export; under Node's ESM loader it arrives wrapped.
const addFormats =
  ((addFormatsModule as unknown as { default?: FormatsPlugin }).default ?? addFormatsModule) as FormatsPlugin

export interface ArgumentProblem {
  /** The argument (`orderId`), or a field of the body (`body.quantity`). */
  path: string
  message: string
}

function makeAjv (coerce: boolean): Ajv {
  // Not strict: the route schemas carry the document's annotations (examples, x-…) beside the
  // keywords, which REST's Ajv knows and this one need not.
  const ajv = new Ajv({
    allErrors: true, strict: false, coerceTypes: coerce ? 'array' : false, useDefaults: false, discriminator: true
  })
  addFormats(ajv)
  return ajv
}

const partsAjv = makeAjv(true)
const bodyAjv = makeAjv(false)

interface Checks { parts: ValidateFunction; body: ValidateFunction | null }
const compiled = new WeakMap<Tool, Checks>()

function checksOf (tool: Tool): Checks {
  let checks = compiled.get(tool)
  if (checks === undefined) {
    const { properties = {}, ...rest } = tool.inputSchema as { properties?: Record<string, unknown> }
    const { body, ...parts } = properties
    checks = {
      // The body's own check is apart (no coercion): here it only has to be there when required.
      parts: partsAjv.compile({ ...rest, properties: { ...parts, ...(body !== undefined && { body: {} }) } }),
      body: body === undefined ? null : bodyAjv.compile(body as object)
    }
    compiled.set(tool, checks)
  }
  return checks
}

/** An Ajv instance path (`/items/0/name`) as a name an agent reads: `items[0].name`. */
function pathOf (prefix: string, instancePath: string): string {
  const segments = instancePath.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
  let out = prefix
  for (const segment of segments) out += /^\d+$/.test(segment) ? `[${segment}]` : out === '' ? segment : `.${segment}`
  return out
}

function problemOf (tool: Tool, error: ErrorObject, prefix: string): ArgumentProblem {
  const params = error.params as Record<string, unknown>
  const at = pathOf(prefix, error.instancePath)
  const under = (name: string): string => clipText(at === '' ? name : `${at}.${name}`, 100)
  switch (error.keyword) {
    case 'required':
      return { path: under(String(params.missingProperty)), message: 'is required' }
    case 'additionalProperties': {
      const name = String(params.additionalProperty)
      if (at === '') {
        const known = Object.keys((tool.inputSchema as { properties?: object }).properties ?? {})
        return {
          path: clipText(name, 100),
          message: `is not an argument of ${tool.name}${known.length > 0 ? ` (its arguments: ${known.join(', ')})` : ' (it takes none)'}`
        }
      }
      return { path: under(name), message: 'is not a field here' }
    }
    case 'enum':
      return { path: at, message: `must be one of: ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}` }
    case 'const':
      return { path: at, message: `must be ${JSON.stringify(params.allowedValue)}` }
    default:
      return { path: at === '' ? '(arguments)' : at, message: error.message ?? 'is invalid' }
  }
}

/**
 * The problems of a call's arguments, at most MAX_ERROR_DETAILS of them, or none. Coerces the
 * path and query values in place (`"5"` to 5), as REST would.
 */
export function argumentProblems (tool: Tool, args: Record<string, unknown>): ArgumentProblem[] {
  const { parts, body } = checksOf(tool)
  const problems: ArgumentProblem[] = []
  if (!parts(args)) problems.push(...(parts.errors ?? []).map((e) => problemOf(tool, e, '')))
  if (body !== null && args.body !== undefined && !body(args.body)) {
    problems.push(...(body.errors ?? []).map((e) => problemOf(tool, e, 'body')))
  }
  return problems.slice(0, MAX_ERROR_DETAILS)
}
