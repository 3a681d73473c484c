// How a request made inside this process for an agent (the MCP endpoint's tool calls, mcp/) is
// told from one that came over the network: a header whose value is a secret of this process, so
// a client cannot make its own requests pass for an agent's.
import { randomUUID } from 'node:crypto'

export const MCP_CHANNEL_HEADER = 'x-petstore-channel'
export const MCP_CHANNEL_TOKEN = `mcp-${randomUUID()}`

/** True for a request the MCP endpoint made on a caller's behalf. */
export const viaMcp = (headers: Record<string, unknown> | undefined): boolean =>
  headers?.[MCP_CHANNEL_HEADER] === MCP_CHANNEL_TOKEN
