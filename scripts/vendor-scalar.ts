// npm run vendor:scalar: copies Scalar's browser bundle from tools/scalar (installed on first use
// with npm on the pinned Node, scripts/tools.ts) to src/openapi/docs/vendor/, where the /docs page
// reads it. The bundle is the one file of Scalar's 24 packages the API serves; vendored, the
// project's npm ci and the image carry neither those packages (150 MB, all needing Node 22:
// issue 35's EBADENGINE lines) nor a build step. To upgrade: change the version in
// tools/scalar/package.json, `npm install --package-lock-only` there, run this, commit the three.
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { installTool, TOOLS_DIR } from './tools.ts'

const VENDOR = fileURLToPath(new URL('../src/openapi/docs/vendor/', import.meta.url))

installTool('scalar')
const pkg = join(TOOLS_DIR, 'scalar', 'node_modules', '@scalar', 'api-reference')
const { version, license } = JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8')) as { version: string; license: string }
copyFileSync(join(pkg, 'dist', 'browser', 'standalone.js'), join(VENDOR, 'scalar-api-reference.js'))
writeFileSync(join(VENDOR, 'README.md'), `# Vendored: Scalar's API reference

\`scalar-api-reference.js\` is \`dist/browser/standalone.js\` of the npm package
\`@scalar/api-reference\` ${version} (${license} licence, https://github.com/scalar/scalar),
copied unchanged by \`npm run vendor:scalar\` (scripts/vendor-scalar.ts) from tools/scalar.
Do not edit it: change the version in tools/scalar/package.json and run the script again.
`)
process.stdout.write(`src/openapi/docs/vendor/scalar-api-reference.js: @scalar/api-reference ${version}\n`)
