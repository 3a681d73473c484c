// What the CLI prints of stored text goes to an operator's terminal: a name stored by an older
// version (before names were checked) or straight into the database may hold an escape sequence
// that sets the terminal's title or colours, moves the cursor or hides the rest of a line
// (issue 30 item 6). So every control character (C0, DEL, C1) and the bidirectional controls
// (which reorder what the line shows) are printed as `\uXXXX`, never as themselves.

// eslint-disable-next-line no-control-regex -- finding control characters is the point
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g
/** The same set, less what JSON.stringify already escapes (C0). */
const UNPRINTABLE_IN_JSON = /[\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g

const escape = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`

/** Text as a terminal may show it: control characters spelt `\u001b`. */
export const printable = (text: string): string => text.replace(UNPRINTABLE, escape)

/** JSON.stringify, with DEL, C1 and bidirectional controls escaped too: still the same JSON. */
export const printableJson = (value: unknown): string => JSON.stringify(value).replace(UNPRINTABLE_IN_JSON, escape)
