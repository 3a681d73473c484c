// /console: the operator console (docs/product.md section 10), served by the API like /docs.
// GET /console is a small HTML page naming its assets by versioned names; GET
// /console/assets/* serves them (shared.js, shared.css, console.js, console.css) compressed,
// immutable for a year while the page revalidates, under a strict Content-Security-Policy on every
// console response: transport/static-ui.ts, which serves /portal the same way.
// Everything the page does goes through the public admin API with the operator's key.
import type { FastifyInstance } from 'fastify'
import { staticUi, UI_CSP } from '../transport/static-ui.ts'

/** The console's Content-Security-Policy: the one every UI of the API has (transport/static-ui.ts). */
export const CONSOLE_CSP = UI_CSP

const JS = 'text/javascript; charset=utf-8'
const CSS = 'text/css; charset=utf-8'
const here = (file: string): URL => new URL(`./${file}`, import.meta.url)

// shared.{js,css}: the layout, tables and chart /portal uses too (src/portal/ui/assets.json names them).
const FILES = [
  { file: 'shared.js', source: here('shared.js'), type: JS },
  { file: 'shared.css', source: here('shared.css'), type: CSS },
  { file: 'console.js', source: here('console.js'), type: JS },
  { file: 'console.css', source: here('console.css'), type: CSS }
]

const serveConsole = staticUi({ path: '/console', html: here('console.html'), files: async () => FILES })

export async function consoleRoutes (app: FastifyInstance): Promise<void> {
  // This plugin's routes only (Fastify encapsulation): the page, its assets and their 404s.
  serveConsole(app)
}
