// A tool's description: the operation's summary, then its text as the finished document gives it
// (the prose file, the scope, the lifecycle notes), once, in MCP's words. The document speaks
// HTTP: the next page is in the `Link` header, a deprecated operation sends `Deprecation` and
// `Sunset`. An agent sees neither header: its result carries `nextCursor` and `deprecation`
// (mcp/results.ts), so the sentences about those headers are put in those words here. A test
// holds every description free of them (test/mcp/mcp-tools.http.test.ts).
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
  const body = paragraphs.map(({ units, separator }, p) => units.flatMap((unit, u) => {
    if (LIFECYCLE_HEADERS.test(unit)) return [DEPRECATION_NOTE]
    if (!aboutLinks(unit)) return [unit]
    return `${p}.${u}` === last && note !== null ? [note] : []
  }).join(separator)).filter((paragraph) => paragraph.trim() !== '')
  if (last === '' && note !== null) body.push(note)
  return [head, ...body].join('\n\n')
}
