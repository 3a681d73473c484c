// The folder graph of src/ (issue 29): no import loop between folders, and no foundation folder
// importing upwards. The graph is built from the import statements themselves (imports,
// re-exports, import() and bare imports), so it also sees what no-restricted-imports cannot (a
// dynamic import). Its nodes are the folders of src/ and its root modules (config.ts, app.ts…);
// the foundation and what each of its folders may import are eslint.config.js's (FOUNDATION).
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

const SRC = fileURLToPath(new URL('../../src/', import.meta.url))
const CONFIG = new URL('../../eslint.config.js', import.meta.url).href
const { FOUNDATION } = await import(CONFIG) as { FOUNDATION: Record<string, string[]> }

/** One import between two nodes, with the file and the specifier that make it. */
interface Edge { from: string; to: string; file: string; specifier: string }

const SPECIFIER = /(?:^|[\s;])(?:import|export)\s[^'"`;]*?from\s*['"]([^'"]+)['"]|(?:^|[\s;(=])import\s*\(\s*['"]([^'"]+)['"]\s*\)|^import\s+['"]([^'"]+)['"]/gm

/** The node of a path under src/: its top folder, or the root module itself. */
function nodeOf (path: string): string {
  const [first] = relative(SRC, path).split('/')
  return first ?? path
}

function sourceFiles (dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return /\.(ts|js)$/.test(entry.name) ? [path] : []
  })
}

/** Every import from one node of src/ to another, read from the sources. */
function srcEdges (): Edge[] {
  const edges: Edge[] = []
  for (const file of sourceFiles(SRC)) {
    const text = readFileSync(file, 'utf8')
    for (const match of text.matchAll(SPECIFIER)) {
      const specifier = match[1] ?? match[2] ?? match[3]
      if (specifier === undefined || !specifier.startsWith('.')) continue
      const target = resolve(dirname(file), specifier)
      if (relative(SRC, target).startsWith('..')) continue
      const from = nodeOf(file)
      const to = nodeOf(target)
      if (from !== to) edges.push({ from, to, file: relative(SRC, file), specifier })
    }
  }
  return edges
}

/** The loops of the graph: each strongly connected component of more than one node (Tarjan). */
function loopsOf (edges: Edge[]): string[][] {
  const next = new Map<string, Set<string>>()
  for (const { from, to } of edges) {
    if (!next.has(from)) next.set(from, new Set())
    if (!next.has(to)) next.set(to, new Set())
    next.get(from)!.add(to)
  }
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const loops: string[][] = []
  const visit = (node: string): void => {
    index.set(node, index.size)
    low.set(node, index.get(node)!)
    stack.push(node)
    onStack.add(node)
    for (const to of next.get(node) ?? []) {
      if (!index.has(to)) {
        visit(to)
        low.set(node, Math.min(low.get(node)!, low.get(to)!))
      } else if (onStack.has(to)) {
        low.set(node, Math.min(low.get(node)!, index.get(to)!))
      }
    }
    if (low.get(node) !== index.get(node)) return
    const component: string[] = []
    let member: string | undefined
    do {
      member = stack.pop()!
      onStack.delete(member)
      component.push(member)
    } while (member !== node)
    if (component.length > 1) loops.push(component.sort())
  }
  for (const node of [...next.keys()].sort()) if (!index.has(node)) visit(node)
  return loops
}

/** The imports of a foundation folder into anything but the foundation folders below it and errors.ts. */
function upwardOf (edges: Edge[], foundation: Record<string, string[]>): Edge[] {
  return edges.filter(({ from, to }) => {
    const below = foundation[from]
    return below !== undefined && to !== 'errors.ts' && !below.includes(to)
  })
}

/** The file-level imports that make up a loop, to say where to cut it. */
const loopEdges = (edges: Edge[], loop: string[]): string[] =>
  edges.filter(({ from, to }) => loop.includes(from) && loop.includes(to)).map(({ file, specifier }) => `${file} → ${specifier}`)

test('src/ has no import loop between folders (nor through a root module such as config.ts)', () => {
  const edges = srcEdges()
  assert.ok(edges.length > 50, `the imports of src/ were read (${edges.length} between folders)`)
  const loops = loopsOf(edges)
  assert.deepEqual(loops.map((loop) => ({ loop, imports: loopEdges(edges, loop) })), [])
})

test('no foundation folder (shared/, ratelimit/, accounts/) imports a feature, the pipeline or a root module', () => {
  const edges = srcEdges()
  assert.ok(edges.some(({ from }) => from === 'accounts'), 'the imports of accounts/ were read')
  assert.deepEqual(upwardOf(edges, FOUNDATION).map(({ file, specifier }) => `${file} → ${specifier}`), [])
})

// The checks themselves find what they are for: a graph with the loops issue 29 removed, and a
// foundation module importing upwards.
const edge = (from: string, to: string): Edge => ({ from, to, file: `${from}/x.ts`, specifier: `../${to}/y.ts` })

test('the loop check reports both loops that keys/ made (keys → http → access → keys, keys → http → config.ts → keys)', () => {
  const edges = [edge('keys', 'http'), edge('http', 'access'), edge('access', 'keys'), edge('http', 'config.ts'), edge('config.ts', 'keys'), edge('pets', 'shared')]
  assert.deepEqual(loopsOf(edges), [['access', 'config.ts', 'http', 'keys']])
  assert.deepEqual(loopsOf([edge('a', 'b'), edge('b', 'c')]), [], 'a chain is no loop')
})

test('the foundation check reports an import upwards and allows one downwards', () => {
  const edges = [edge('accounts', 'http'), edge('shared', 'config.ts'), edge('accounts', 'shared'), edge('accounts', 'errors.ts'), edge('pets', 'accounts')]
  assert.deepEqual(upwardOf(edges, FOUNDATION).map(({ from, to }) => `${from} → ${to}`), ['accounts → http', 'shared → config.ts'])
})
