// Dev tools kept out of the project's npm ci: each is a package of its own under tools/NAME
// (package.json and lockfile), installed here on first use. Their packages need Node 22 or later
// (Stryker and its Babel 8, the MCP Inspector), and npm judges every package it installs against
// the Node that runs npm: for the project's npm ci that is the machine's, which may be 20 (issue
// 35: 735 lines of EBADENGINE). This installs them with npm on the pinned Node 24 instead, which
// they run on. See docs/testing.md, "Tools installed on first use".
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { delimiter, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const TOOLS_DIR = fileURLToPath(new URL('../tools/', import.meta.url))

/** PATH with this Node's directory first: npm (`#!/usr/bin/env node`) then runs on the pinned Node 24. */
export const pinnedNodePath = (): string => [dirname(process.execPath), process.env.PATH ?? ''].join(delimiter)

/**
 * Installs tools/NAME with `npm ci` when it was never installed or its lockfile changed since
 * (a digest of the lockfile is kept beside the packages), and returns its node_modules/.bin.
 * Needs the registry the first time, like the project's own npm ci.
 */
export function installTool (name: string): string {
  const dir = join(TOOLS_DIR, name)
  const digest = createHash('sha256').update(readFileSync(join(dir, 'package-lock.json'))).digest('hex')
  const stamp = join(dir, 'node_modules', '.lockfile-sha256')
  if (!existsSync(stamp) || readFileSync(stamp, 'utf8') !== digest) {
    process.stderr.write(`tools/${name}: npm ci on Node ${process.version} (first use, or its lockfile changed)\n`)
    // npm's output, warnings included, goes to stderr: stdout may be a report or a test's TAP.
    const result = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: dir, env: { ...process.env, PATH: pinnedNodePath() }, stdio: ['ignore', 2, 2] })
    if (result.status !== 0) throw new Error(`npm ci in tools/${name} failed (${result.error?.message ?? `exit ${result.status}`}): see its output above`)
    writeFileSync(stamp, digest)
  }
  return join(dir, 'node_modules', '.bin')
}
