// http/ is the request pipeline: no file in it registers a /v1 route (operations live in their
// feature folders). Each route's registration is traced to the file that declared it: an onRoute
// hook, installed first, reads the call stack, whose first frame under src/ is that file.
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'
import { test } from 'node:test'
import type { Step } from '../../src/http/steps.ts'
import { buildTestApp } from '../helpers/app.ts'

const SRC = fileURLToPath(new URL('../../src/', import.meta.url))

/** The file under src/ that declared the route being added: the first stack frame there. */
function declaringFile (): string {
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 100
  const stack = new Error().stack ?? ''
  Error.stackTraceLimit = limit
  for (const line of stack.split('\n')) {
    const match = /\((?:file:\/\/)?([^()]+?):\d+:\d+\)$/.exec(line) ?? /at (?:file:\/\/)?(\/[^ ]+?):\d+:\d+$/.exec(line)
    if (match?.[1]?.startsWith(SRC) === true) return match[1].slice(SRC.length)
  }
  return '(none)'
}

test('no file in src/http/ registers a /v1 route; each /v1 route comes from a feature folder', async (t) => {
  const owners = new Map<string, string>()
  const tracer: Step = {
    name: 'route-owners',
    needs: [],
    install: (app) => { app.addHook('onRoute', (route) => { owners.set(`${String(route.method)} ${route.url}`, declaringFile()) }) }
  }
  await buildTestApp(t, { arrangeSteps: (steps) => [tracer, ...steps] })

  const v1 = [...owners].filter(([route]) => / \/v1(\/|$)/.test(route))
  assert.ok(v1.length >= 30, `the /v1 routes were traced (${v1.length})`)
  assert.ok(owners.get('GET /v1/rate_limit') === 'rate-limit-status/rate-limit-status.routes.ts', `GET /v1/rate_limit comes from ${owners.get('GET /v1/rate_limit')}`)
  const inHttp = v1.filter(([, file]) => file.startsWith('http/'))
  assert.deepEqual(inHttp, [], 'routes under /v1 registered by a file of src/http/')
  for (const [route, file] of v1) assert.match(file, /^[a-z-]+\/[a-z-]+\.routes\.ts$/, `${route} is declared in ${file}, not in a feature's routes file`)
})
