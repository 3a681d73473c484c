// The MCP endpoint as app.ts installs it, in two steps: the tools are collected from the /v1
// routes as they are declared (so before them), and the endpoint is registered after them (its
// tools call those routes). What it cannot know from here, the document's prose of an operation
// and the API's version, is given by app.ts, which composes openapi/.
import type { FastifyInstance } from 'fastify'
import { MCP_CHANNEL_HEADER, MCP_CHANNEL_TOKEN } from '../shared/channel.ts'
import type { Clock } from '../shared/clock.ts'
import { mcpRoutes } from './mcp.routes.ts'
import { collectTools, type Tool } from './tools.ts'

export interface McpShared {
  clock: Clock
  /** MCP_REPEAT_LIMIT (config.ts). */
  repeatLimit: number
  /** The description the finished document gives an operation (openapi/). */
  describe: (app: FastifyInstance, operationId: string) => string | undefined
  version: string
}

export interface McpFeature {
  /** Collects the tools of the /v1 routes declared after it. */
  readonly collectTools: (app: FastifyInstance) => void
  /** The endpoint, once the /v1 routes are declared. */
  readonly routes: (app: FastifyInstance) => Promise<void>
}

export function mcpFeature (shared: McpShared): McpFeature {
  let tools: readonly Tool[] = []
  return {
    collectTools: (app) => { tools = collectTools(app) },
    routes: (app) => mcpRoutes(app, {
      tools,
      describe: (operationId) => shared.describe(app, operationId),
      clock: shared.clock,
      repeatLimit: shared.repeatLimit,
      channel: { header: MCP_CHANNEL_HEADER, value: MCP_CHANNEL_TOKEN },
      version: shared.version
    })
  }
}
