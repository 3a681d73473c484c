// A tool's description: the operation's summary, then its text as the finished document gives it
// (the prose file, the scope, the lifecycle notes), once, in MCP's words. The document speaks
// HTTP: the next page is in the `Link` header, a deprecated operation sends `Deprecation` and
// `Sunset`. An agent sees neither header: its result carries `nextCursor` and `deprecation`
// (mcp/results.ts), so the sentences about those headers are put in those words here. A test
// holds every description free of them (test/mcp/mcp-tools.http.test.ts).
//
// Short, because an agent pays for every byte of tools/list: the summary, the first sentences of
// the operation's first paragraph, its deprecation notice and how it pages; the rest of its text
// is in the document (/openapi.json, /docs), which the server's instructions point to. Left out
// too: the scope paragraph (tools/list offers a key only the tools its role and scopes may call)
// and the beta notice (about the shapes' stability, for those who write clients).
import type { Tool } from './tools.ts'

/** A sentence that sends the reader to REST's Link header, or to following its links. */
const LINK_SENTENCE = /`Link[`:]|`next` link|\b(?:that|the) links?\b|rel="next"/
/** The lifecycle note's sentence about the headers of a deprecated operation (routing/lifecycle.ts). */
const LIFECYCLE_HEADERS = /`Deprecation`/

const DEPRECATION_NOTE = 'Every result carries `deprecation`: since when, when it stops working, and what to call instead.'

const PAGING_NOTE: Record<NonNullable<Tool['paging']>, string> = {
  pages: 'The next page, if any, starts at the result\'s `nextCursor`: call again with it as `cursor`, the other arguments unchanged.',
  feed: 'Every result carries `nextCursor`, the last and empty pages included: call again with it as `cursor`, at once or later, for what came after; a page with nothing new is empty and keeps the same position. Following it never misses an event and never returns one twice.'
}

const LIST_LINE = /^\s*(?:[-*|]|\d+\.)\s/

/**
 * How much of the operation's first paragraph a description shows, in whole sentences (at least
 * one): what the operation does; its rules and refusals are in the document, and each refusal
 * says what it is.
 */
const FIRST_PARAGRAPH_CHARS = 200

/** The document's paragraphs that tools/list does without (openapi/openapi.ts writes them). */
const LEFT_OUT = /^\*\*(?:Scopes?:|Beta\.)\*\*/

/** A paragraph in units: its sentences, or the lines of a list or a table; and how they join again. */
function unitsOf (paragraph: string): { units: string[]; separator: string } {
  const lines = paragraph.split('\n')
  if (lines.some((line) => LIST_LINE.test(line))) return { units: lines, separator: '\n' }
  // A sentence ends at . ! or ? (maybe closing a **bold** run) before white space.
  return { units: lines.join(' ').split(/(?<=[.!?](?:\*\*)?)\s+/), separator: ' ' }
}

/** The description of a tool: its summary, then the document's text for it in MCP's words. */
export function toolDescription (
  tool: Pick<Tool, 'title' | 'description' | 'deprecated' | 'paging'>,
  prose: string | undefined
): string {
  const head = tool.deprecated ? `DEPRECATED. ${tool.title}` : tool.title
  const paragraphs = (prose ?? tool.description).split(/\n{2,}/).map(unitsOf)
  const aboutLinks = (unit: string): boolean => LINK_SENTENCE.test(unit) && !LIFECYCLE_HEADERS.test(unit)
  // The paging note goes where the text last spoke of the Link header (a feed's own paragraph,
  // not the one about its filters), else at the end.
  let last = ''
  for (const [p, { units }] of paragraphs.entries()) {
    for (const [u, unit] of units.entries()) if (aboutLinks(unit)) last = `${p}.${u}`
  }
  const note = tool.paging === null ? null : PAGING_NOTE[tool.paging]
  // Each paragraph in MCP's words, and whether it is kept: the deprecation notice, the paging
  // note, and the first paragraph of the operation's own text, to its first FIRST_PARAGRAPH_CHARS
  // characters' sentences.
  let first = true
  const body = paragraphs.flatMap(({ units, separator }, p) => {
    let notice = false
    let paging = false
    const parts = units.flatMap((unit, u) => {
      if (LIFECYCLE_HEADERS.test(unit)) { notice = true; return [{ unit: DEPRECATION_NOTE, kept: true }] }
      if (!aboutLinks(unit)) return [{ unit, kept: false }]
      if (`${p}.${u}` !== last || note === null) return []
      paging = true
      return [{ unit: note, kept: true }]
    })
    const text = parts.map((part) => part.unit).join(separator)
    if (text.trim() === '' || LEFT_OUT.test(text.trim())) return []
    if (notice) return [text]
    const opening = first
    first = false
    if (!opening) return paging ? [text] : []
    if (separator !== ' ') return [text]
    let length = 0
    const shown = parts.filter((part) => {
      if (part.kept) return true
      length += part.unit.length + 1
      return length === part.unit.length + 1 || length <= FIRST_PARAGRAPH_CHARS
    })
    return [shown.map((part) => part.unit).join(separator)]
  })
  if (last === '' && note !== null) body.push(note)
  return [head, ...body].join('\n\n')
}
