// The server's `instructions` (MCP initialize): what an agent needs before its first call and
// cannot read from any one tool: how calls are charged, how a create is made safe to repeat, when
// the loop breaker steps in, how lists page. The same rules as docs/api.md "Agents (MCP)".

export function serverInstructions ({ repeatLimit, freeTools, feeds }: {
  repeatLimit: number
  /** The tools whose operation costs no quota. */
  freeTools: readonly string[]
  /** The list tools whose every result carries the next cursor (a feed to poll). */
  feeds: readonly string[]
}): string {
  const free = freeTools.length === 0 ? '' : ` (${freeTools.join(', ')} ${freeTools.length === 1 ? 'costs' : 'cost'} nothing)`
  const feed = feeds.length === 0
    ? ''
    : ` ${feeds.join(', ')} is a feed: its results always carry \`nextCursor\`; call again with it later for the events that came after.`
  return [
    'The Petstore API. Each tool is one operation of its REST API, called with your API key and answered as REST answers it: `structuredContent.data` is the answer, `status` its HTTP status.',
    `Quotas: your key has a minute and a day window. A tool call costs what its operation costs, one request${free}; initialize, tools/list and any other request cost one request each; notifications cost nothing. A refused call is a result with \`isError: true\` and \`structuredContent.error\` (\`code\`, \`message\`); a 429 also gives \`retryAfter\` (seconds), \`windows\` and \`exhaustedWindow\`. Wait \`retryAfter\` seconds before the next call: calling on while refused gets the key banned (\`api_key_banned\`), for longer each time. getRateLimit tells how much is left.`,
    'Idempotency: a create (a tool with an `idempotencyKey` argument) called again with the same arguments in the same session (Mcp-Session-Id) returns the first result and creates nothing, so repeat it freely after a timeout or an error; pass your own `idempotencyKey` to make a retry safe across sessions. Another session is another intent.',
    `Loop breaker: the same tool with the same arguments more than ${repeatLimit} times in a minute is refused with \`tool_call_repeated\` (429): change the arguments, or wait \`retryAfter\` seconds.`,
    'Arguments are checked against each tool\'s inputSchema: a missing, unknown or malformed one is `validation_failed`, and `error.details` names each argument at fault.',
    `Lists: a result with more to come carries \`nextCursor\`: call the tool again with it as \`cursor\` and the other arguments unchanged.${feed}`,
    'A result with `etag` is a version of a record: pass it as `ifMatch` to a change of that record, which is then refused with `412 precondition_failed` if the record changed since.',
    'A deprecated tool says DEPRECATED in its description, and its results carry `deprecation` (since when, its sunset, what to call instead).',
    'A tool\'s description is its operation\'s summary and the first sentences of its text; the API reference (`/docs`, `/openapi.json` on this server) has the rest, under the same operationId.'
  ].join('\n\n')
}
