// The rate-limit suite (test/access/rate-limit.suite.ts) with every call of the keys under test
// made as an MCP tool call: the official SDK client over Streamable HTTP to the listening app,
// the key in Authorization (test/helpers/transport.ts). The same windows are spent after the
// same number of charged requests, the same 429 comes back as a tool result with retryAfter and
// the windows, the same bans start, are recorded and lifted (issue 33). Runs on both engines and,
// listed in package.json, on the Redis limiter.
import { rateLimitSuite } from '../access/rate-limit.suite.ts'

rateLimitSuite('mcp')
