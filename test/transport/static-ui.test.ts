// transport/static-ui.ts on a bare Fastify app, with files of the test's own: what the console and
// portal tests do not pin (they serve fixed files once per process). Catches: a page naming a
// file by a name that does not change with its bytes, files read again for every app (or a failed
// read kept for the life of the process), the CSP missing from a route of the UI's plugin or
// leaking to a route outside it.
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { test, type TestContext } from 'node:test'
import Fastify, { type FastifyInstance } from 'fastify'
import { staticUi, UI_CSP, type StaticUiOptions } from '../../src/transport/static-ui.ts'
import { tempDir } from '../helpers/temp.ts'

/** A folder holding page.html, which names app.js and app.css, and the two files with the given bytes. */
function uiFolder (t: TestContext, js: string, css = 'body { margin: 0 }'): (file: string) => URL {
  const dir = tempDir(t)
  writeFileSync(join(dir, 'page.html'), '<script src="{{app.js}}"></script><link href="{{app.css}}">')
  writeFileSync(join(dir, 'app.js'), js)
  writeFileSync(join(dir, 'app.css'), css)
  return (file) => pathToFileURL(join(dir, file))
}

function options (at: (file: string) => URL, path = '/ui'): StaticUiOptions {
  return {
    path,
    html: at('page.html'),
    files: async () => [
      { file: 'app.js', source: at('app.js'), type: 'text/javascript; charset=utf-8' },
      { file: 'app.css', source: at('app.css'), type: 'text/css; charset=utf-8' }
    ]
  }
}

/** An app serving `serve` in a plugin under `prefix`, with one more route of that plugin and one outside it. */
async function appWith (t: TestContext, serve: (app: FastifyInstance) => void, prefix = ''): Promise<FastifyInstance> {
  const app = Fastify()
  t.after(() => app.close())
  await app.register(async (plugin) => {
    serve(plugin)
    plugin.get('/ui/other', async () => ({ ok: true }))
  }, { prefix })
  app.get('/outside', async () => ({ ok: true }))
  await app.ready()
  return app
}

const namesIn = (html: string): string[] => [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!)

test('the page names each file by a name made of its bytes, under the app\'s prefix', async (t) => {
  const at = uiFolder(t, 'console.log(1)')
  const app = await appWith(t, staticUi(options(at)), '/p')
  const page = await app.inject({ method: 'GET', url: '/p/ui' })
  assert.equal(page.statusCode, 200)
  assert.equal(page.headers['content-type'], 'text/html; charset=utf-8')
  assert.equal(page.headers['cache-control'], 'no-cache')
  const [js, css] = namesIn(page.body)
  assert.match(js!, /^\/p\/ui\/assets\/app\.[0-9a-f]{16}\.js$/)
  assert.match(css!, /^\/p\/ui\/assets\/app\.[0-9a-f]{16}\.css$/)
  const asset = await app.inject({ method: 'GET', url: js! })
  assert.equal(asset.statusCode, 200)
  assert.equal(asset.body, 'console.log(1)')
  assert.equal(asset.headers['content-type'], 'text/javascript; charset=utf-8')
  assert.equal(asset.headers['cache-control'], 'public, max-age=31536000, immutable')

  // Other bytes, another name; the same bytes elsewhere, the same name.
  const other = await appWith(t, staticUi(options(uiFolder(t, 'console.log(2)'))), '/p')
  const [otherJs, otherCss] = namesIn((await other.inject({ method: 'GET', url: '/p/ui' })).body)
  assert.notEqual(otherJs, js)
  assert.equal(otherCss, css)
})

test('the files are read once for every app of the process; a failed read is tried again', async (t) => {
  const dir = tempDir(t)
  const at = (file: string): URL => pathToFileURL(join(dir, file))
  writeFileSync(join(dir, 'page.html'), '<script src="{{app.js}}"></script><link href="{{app.css}}">')
  writeFileSync(join(dir, 'app.css'), 'p {}')
  const serve = staticUi(options(at))

  // app.js is missing: the first request fails, and nothing of it is kept.
  const first = await appWith(t, serve)
  assert.equal((await first.inject({ method: 'GET', url: '/ui' })).statusCode, 500)
  writeFileSync(join(dir, 'app.js'), 'one()')
  const page = await first.inject({ method: 'GET', url: '/ui' })
  assert.equal(page.statusCode, 200)
  const [js] = namesIn(page.body)

  // Read once: a second app of the process serves the bytes the first read, not the file's new ones.
  writeFileSync(join(dir, 'app.js'), 'two()')
  const second = await appWith(t, serve)
  const again = await second.inject({ method: 'GET', url: '/ui' })
  assert.deepEqual(namesIn(again.body)[0], js)
  assert.equal((await second.inject({ method: 'GET', url: js! })).body, 'one()')
})

test('every answer of the UI\'s plugin carries the CSP and no Referer; a route outside it does not', async (t) => {
  const app = await appWith(t, staticUi(options(uiFolder(t, 'x()'))))
  const page = await app.inject({ method: 'GET', url: '/ui' })
  const [js] = namesIn(page.body)
  const answers = {
    page,
    asset: await app.inject({ method: 'GET', url: js! }),
    'unknown asset': await app.inject({ method: 'GET', url: '/ui/assets/app.0000000000000000.js' }),
    'another route of the plugin': await app.inject({ method: 'GET', url: '/ui/other' })
  }
  assert.equal(answers['unknown asset'].statusCode, 404)
  for (const [what, answer] of Object.entries(answers)) {
    assert.equal(answer.headers['content-security-policy'], UI_CSP, what)
    assert.equal(answer.headers['referrer-policy'], 'no-referrer', what)
  }
  const outside = await app.inject({ method: 'GET', url: '/outside' })
  assert.equal(outside.headers['content-security-policy'], undefined)
  assert.equal(outside.headers['referrer-policy'], undefined)
  assert.match(UI_CSP, /frame-ancestors 'none'/)
  assert.doesNotMatch(UI_CSP, /unsafe|https?:|\*/)
})

test('a file named without an extension is refused, not served under a broken name', async (t) => {
  const at = uiFolder(t, 'x()')
  const serve = staticUi({ ...options(at), files: async () => [{ file: 'app', source: at('app.js'), type: 'text/plain' }] })
  const app = await appWith(t, serve)
  assert.equal((await app.inject({ method: 'GET', url: '/ui' })).statusCode, 500)
})
