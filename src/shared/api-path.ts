// "Is this under /v1?", answered in one place. The routes are declared under API_PREFIX (app.ts);
// the steps that read each route as it is declared (the role check, the error responses of the
// document, the MCP tools) and the access step, for a request that matched no route, all ask
// isApiPath, so a path is never /v1 to one of them and not to another.

/** The prefix of every operation: the version of the API. */
export const API_PREFIX = '/v1'

/** The authority of an absolute-form request target (`GET http://host/v1/pets`), scheme included. */
export const ABSOLUTE_FORM = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/

/**
 * Whether a route's path, or a request target, lies under /v1 (/v1 itself, or below it: never
 * /v1x). A request target is read the way the router reads it: the path of an absolute-form
 * target, without the query, percent-escapes decoded (a malformed one is left as it is rather
 * than failing), repeated slashes collapsed, letters folded. For a request it never lets one skip
 * a check: a route that declares a role is checked whatever this answers (access/targets.ts).
 */
export function isApiPath (url: string): boolean {
  let path = url
  const authority = ABSOLUTE_FORM.exec(path)
  if (authority !== null) path = path.slice(authority[0].length)
  const end = path.search(/[?#]/)
  if (end !== -1) path = path.slice(0, end)
  if (path.includes('%')) {
    path = path.replace(/%([0-9A-Fa-f]{2})/g, (_match, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)))
  }
  path = path.replace(/\/{2,}/g, '/').toLowerCase()
  return path === API_PREFIX || path.startsWith(`${API_PREFIX}/`)
}
