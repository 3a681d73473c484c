// `npm run bench -- --instances N` puts the instances behind deploy/nginx.conf's load balancer,
// or behind bench/proxy.ts where nginx is missing. Both must spread requests round robin and
// replace X-Forwarded-For, as the compose stack's nginx does, or the comparison measures
// something else than the stack.
import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test } from 'node:test'
import { nginxConfig, startProxy } from '../../bench/instances.ts'
import { hasCommand } from '../../bench/processes.ts'

/** Two upstreams that answer their own name and the X-Forwarded-For they got. */
async function upstreams (t: { after (fn: () => Promise<void>): void }): Promise<string[]> {
  const bases: string[] = []
  for (const name of ['a', 'b']) {
    const server = createServer((request, response) => {
      request.resume()
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ name, forwardedFor: request.headers['x-forwarded-for'] ?? null }))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    t.after(() => new Promise<void>((resolve) => { server.close(() => resolve()); server.closeAllConnections() }))
    bases.push(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)
  }
  return bases
}

for (const kind of ['node', 'auto'] as const) {
  test(`the ${kind === 'node' ? 'node:http stand-in' : 'nginx (deploy/nginx.conf)'} proxy alternates between two instances and replaces X-Forwarded-For`, { timeout: 30_000, skip: kind === 'auto' && !hasCommand('nginx', ['-v']) ? 'nginx is not installed' : false }, async (t) => {
    const proxy = await startProxy(await upstreams(t), null, kind)
    t.after(() => proxy.stop())
    assert.match(proxy.name, kind === 'node' ? /^a node:http round-robin proxy/ : /^nginx/)
    const answers: { name: string; forwardedFor: string | null }[] = []
    for (let i = 0; i < 4; i++) {
      const response = await fetch(`${proxy.base}/v1/pets/1`, { headers: { 'x-forwarded-for': '203.0.113.9' } })
      assert.equal(response.status, 200)
      answers.push(await response.json() as { name: string; forwardedFor: string | null })
    }
    assert.deepEqual(answers.map((a) => a.name).sort(), ['a', 'a', 'b', 'b'])
    assert.notEqual(answers[0]!.name, answers[1]!.name)
    for (const a of answers) assert.equal(a.forwardedFor, '127.0.0.1')
  })
}

test('the nginx configuration is deploy/nginx.conf with the instances as upstreams and a loopback listen', async () => {
  const site = await readFile(new URL('../../deploy/nginx.conf', import.meta.url), 'utf8')
  const conf = nginxConfig(site, ['http://127.0.0.1:4001', 'http://127.0.0.1:4002'], 5000, '/tmp/x')
  assert.match(conf, /upstream petstore \{\n {2}server 127\.0\.0\.1:4001 max_fails=3 fail_timeout=10s;\n {2}server 127\.0\.0\.1:4002 max_fails=3 fail_timeout=10s;\n {2}keepalive 32;/)
  assert.match(conf, /listen 127\.0\.0\.1:5000;/)
  assert.doesNotMatch(conf, /server api-|listen 80;/)
  // The rest of the site is the stack's own: the proxy headers and the retry rule.
  assert.ok(conf.includes('proxy_set_header X-Forwarded-For $remote_addr;') && conf.includes('proxy_next_upstream error timeout http_502 http_503;'))
})
