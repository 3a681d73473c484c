// The workflows of /arazzo.yaml run against a live server by Redocly's respect (the pinned
// @redocly/cli): both must pass with the document and the Arazzo file the server itself serves,
// so a change of an operation that breaks a documented workflow fails here.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { test } from 'node:test'
import { promisify } from 'node:util'
import { ARAZZO_FILE } from '../../src/openapi/serve.ts'
import { listenTestApp } from '../helpers/app.ts'
import { tempDir } from '../helpers/temp.ts'

const run = promisify(execFile)
const REDOCLY = new URL('../../node_modules/@redocly/cli/bin/cli.js', import.meta.url).pathname

test('both workflows of /arazzo.yaml pass against a running server (redocly respect)', { timeout: 120_000 }, async (t) => {
  const api = await listenTestApp(t)
  const root = api.baseUrl.slice(0, -'/v1'.length)
  const staff = { 'x-api-key': api.keys.staff, 'content-type': 'application/json' }
  const category = await (await fetch(`${api.baseUrl}/categories`, {
    method: 'POST',
    headers: staff,
    body: JSON.stringify({ name: 'Dogs' })
  })).json() as { id: number }
  const pet = await (await fetch(`${api.baseUrl}/pets`, {
    method: 'POST',
    headers: staff,
    body: JSON.stringify({ name: 'Rex', categoryId: category.id })
  })).json() as { id: number }
  assert.equal((await fetch(`${api.baseUrl}/store/inventory/${pet.id}`, {
    method: 'PUT',
    headers: staff,
    body: JSON.stringify({ quantity: 3 })
  })).status, 200)

  const served = await (await fetch(`${root}/arazzo.yaml`)).text()
  assert.equal(served, await readFile(ARAZZO_FILE, 'utf8'), '/arazzo.yaml serves the file')
  const dir = tempDir(t)
  await writeFile(join(dir, 'workflows.arazzo.yaml'), served)
  await writeFile(join(dir, 'openapi.json'), await (await fetch(`${root}/openapi.json`)).text())
  const report = join(dir, 'report.json')
  const outcome = await run(
    process.execPath,
    [REDOCLY, 'respect', 'workflows.arazzo.yaml', '--server', `petstore=${api.baseUrl}`, '--input', `apiKey=${api.keys.customer}`, '-J', report],
    { cwd: dir, env: { ...process.env, REDOCLY_TELEMETRY: 'off', NO_COLOR: '1' } }
  ).then(() => 0, (error: { code?: number; stdout?: string }) => {
    t.diagnostic(error.stdout ?? '')
    return error.code ?? 1
  })
  assert.equal(outcome, 0, 'respect exits 0')
  const json = JSON.parse(await readFile(report, 'utf8')) as {
    files: Record<string, { executedWorkflows: Array<{ workflowId: string; status: string }> }>
  }
  const workflows = Object.values(json.files)
    .flatMap((file) => file.executedWorkflows.map((w) => `${w.workflowId}:${w.status}`))
    .sort()
  assert.deepEqual(workflows, ['cancelOrderRestock:success', 'orderAvailablePet:success'])
  const orders = await (await fetch(`${api.baseUrl}/store/orders`, { headers: { 'x-api-key': api.keys.customer } })).json() as unknown[]
  assert.equal(orders.length, 1, 'one order placed and kept, one placed and cancelled')
})
