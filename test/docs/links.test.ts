// The README stays a front door, and the documentation's cross-references stay true (issue 24
// item 6): the README opens with the two commands and stays short, and every relative link of
// README.md, SECURITY.md and docs/*.md reaches an existing file and, when it names one, a heading
// of that file. Faults caught: a page moved or renamed while a link still names it, a heading
// reworded under a link to it, reference material piling up in the README again.
import assert from 'node:assert/strict'
import { access, readdir, readFile } from 'node:fs/promises'
import { dirname, join, relative } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))

async function pages (): Promise<string[]> {
  const docs = (await readdir(join(ROOT, 'docs'))).filter((f) => f.endsWith('.md')).map((f) => join('docs', f))
  return ['README.md', 'SECURITY.md', ...docs]
}

/** The text outside fenced code blocks and inline code, where a link is a link. */
function prose (markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[ \t]*$/gm, '').replace(/`[^`\n]*`/g, '')
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
export function slug (heading: string): string {
  const text = heading.replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
  return text.trim().toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-')
}

/** Every anchor a Markdown file offers, with GitHub's -1, -2 … for repeated headings. */
export function anchors (markdown: string): Set<string> {
  const seen = new Map<string, number>()
  const found = new Set<string>()
  const withoutCode = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[ \t]*$/gm, '')
  for (const match of withoutCode.matchAll(/^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$/gm)) {
    const base = slug(match[1]!)
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    found.add(n === 0 ? base : `${base}-${n}`)
  }
  return found
}

/** The relative link targets of a Markdown file: inline links and images, outside code. */
export function links (markdown: string): string[] {
  const targets: string[] = []
  for (const match of prose(markdown).matchAll(/!?\[(?:[^\]]|\][^(])*?\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    const target = match[1]!
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue // http:, https:, mailto:
    targets.push(target)
  }
  return targets
}

async function exists (path: string): Promise<boolean> {
  try {
    await access(path)
    return true
  } catch {
    return false
  }
}

test('the README opens with the two commands: npm ci && npm start, npm ci && npm test', async () => {
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8')
  const first = /^```[^\n]*\n([\s\S]*?)^```/m.exec(readme)?.[1]
  assert.ok(first !== undefined, 'the README has a code block')
  const commands = first.trim().split('\n').map((line) => line.replace(/#.*$/, '').trim())
  assert.deepEqual(commands, ['npm ci && npm start', 'npm ci && npm test'])
})

test('the README is a front door: at most 170 lines', async () => {
  const lines = (await readFile(join(ROOT, 'README.md'), 'utf8')).trimEnd().split('\n').length
  assert.ok(lines <= 170, `README.md has ${lines} lines; move reference material into docs/`)
})

test('every relative link of README.md, SECURITY.md and docs/*.md reaches a file, and a heading where it names one', async () => {
  const broken: string[] = []
  let checked = 0
  for (const page of await pages()) {
    const text = await readFile(join(ROOT, page), 'utf8')
    for (const target of links(text)) {
      checked++
      const [path = '', anchor] = target.split('#', 2)
      const file = path === '' ? join(ROOT, page) : join(dirname(join(ROOT, page)), decodeURIComponent(path))
      if (!await exists(file)) {
        broken.push(`${page}: ${target} (no file ${relative(ROOT, file)})`)
        continue
      }
      if (anchor === undefined) continue
      if (!file.endsWith('.md')) {
        broken.push(`${page}: ${target} (an anchor into a file that is not Markdown)`)
        continue
      }
      if (!anchors(await readFile(file, 'utf8')).has(decodeURIComponent(anchor))) {
        broken.push(`${page}: ${target} (no heading #${anchor} in ${relative(ROOT, file)})`)
      }
    }
  }
  assert.ok(checked > 20, `only ${checked} links found: the link pattern is broken`)
  assert.deepEqual(broken, [])
})

/**
 * The repository paths a page names in inline code (`src/http/access.ts`, `accounts/keys.rules.ts`,
 * `test/fuzz/`): relative to the repository, to src/ (as docs/architecture.md writes them) or to
 * the client's folder (its section). Globs, placeholders and URL paths are not paths.
 */
export function namedPaths (markdown: string): string[] {
  const outsideBlocks = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[ \t]*$/gm, '')
  const paths: string[] = []
  for (const match of outsideBlocks.matchAll(/`([^`\n]+)`/g)) {
    const text = match[1]!
    if (!/^[\w.@-]+(\/[\w.@-]+)*\/?$/.test(text) || !text.includes('/')) continue
    if (text.endsWith('/') || /\.(ts|js|md|json|yaml|yml|css|html|conf)$/.test(text)) paths.push(text)
  }
  return paths
}

const PATH_BASES = ['', 'src', 'clients/typescript']

test('every path docs/architecture.md and the pages moved out of the README name exists', async () => {
  // Generated folders (clients/typescript/dist/ …) are named in .gitignore: they count as present.
  const generated = (await readFile(join(ROOT, '.gitignore'), 'utf8'))
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.endsWith('/') && l.includes('/'))
  const missing: string[] = []
  let checked = 0
  for (const page of ['docs/architecture.md', 'README.md', 'SECURITY.md', 'docs/api.md', 'docs/configuration.md', 'docs/console.md', 'docs/operating.md', 'docs/reliability.md']) {
    for (const path of namedPaths(await readFile(join(ROOT, page), 'utf8'))) {
      checked++
      let found = false
      for (const base of PATH_BASES) {
        const candidate = join(base, path)
        if (await exists(join(ROOT, candidate)) || generated.some((g) => (candidate + '/').startsWith(g))) found = true
      }
      if (!found) missing.push(`${page}: ${path}`)
    }
  }
  assert.ok(checked > 50, `only ${checked} paths found: the path pattern is broken`)
  assert.deepEqual(missing, [])
})

test('the anchors are GitHub\'s', () => {
  assert.equal(slug('10. The operator console'), '10-the-operator-console')
  assert.equal(slug('The operator console (`src/console/`)'), 'the-operator-console-srcconsole')
  assert.equal(slug('Nothing outside `/v1` is rate limited'), 'nothing-outside-v1-is-rate-limited')
  assert.equal(slug('Key lifecycle (beta)'), 'key-lifecycle-beta')
  assert.deepEqual([...anchors('# A\n\n## B\n\n```\n# not a heading\n```\n\n## B\n')], ['a', 'b', 'b-1'])
  assert.deepEqual(namedPaths('`src/app.ts` `http/` `*.store.ts` `/v1/pets` `node:sqlite` `a/b`\n```\n`src/x.ts`\n```\n'), ['src/app.ts', 'http/'])
  assert.deepEqual(links('[a](docs/a.md) `[b](b.md)` [c](https://x.example) ![d](d.png)\n```\n[e](e.md)\n```\n'), ['docs/a.md', 'd.png'])
})
