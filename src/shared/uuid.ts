// A UUID's two forms, text and 16 bytes: request ids are made from random bytes
// (http/request-log.ts), and the request log keeps ours as bytes until its flush
// (key-requests/key-requests.recorder.ts). Lower case only: the text read back is the text given.

// The text is written into one buffer and read out as one string: Node's randomUUID builds its
// string from twenty pieces (docs/performance.md).
const text = Buffer.from('00000000-0000-0000-0000-000000000000', 'latin1')
const HEX_DIGITS = Buffer.from('0123456789abcdef', 'latin1')
/** Where in the text the two hex digits of each of the 16 bytes go. */
const DIGITS_AT = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34]
const DASHES_AT = [8, 13, 18, 23]

/** The lower-case UUID whose 16 bytes are in `bytes` at `at`. */
export function uuidText (bytes: Uint8Array, at: number): string {
  for (let i = 0; i < 16; i++) {
    const byte = bytes[at + i]!
    const digit = DIGITS_AT[i]!
    text[digit] = HEX_DIGITS[byte >> 4]!
    text[digit + 1] = HEX_DIGITS[byte & 15]!
  }
  return text.toString('latin1', 0, 36)
}

/** The value of a lower-case hex digit's character code, or -1. */
function hexValue (code: number): number {
  if (code >= 48 && code <= 57) return code - 48
  if (code >= 97 && code <= 102) return code - 87
  return -1
}

/**
 * Writes a lower-case UUID's 16 bytes into `bytes` at `at`; false (bytes left as they were
 * partly written, never read) for any other string, which the caller keeps as it is: `uuidText`
 * gives back exactly the string read.
 */
export function uuidBytes (id: string, bytes: Uint8Array, at: number): boolean {
  if (id.length !== 36) return false
  for (const dash of DASHES_AT) if (id.charCodeAt(dash) !== 45) return false
  for (let i = 0; i < 16; i++) {
    const digit = DIGITS_AT[i]!
    const high = hexValue(id.charCodeAt(digit))
    const low = hexValue(id.charCodeAt(digit + 1))
    if (high === -1 || low === -1) return false
    bytes[at + i] = (high << 4) | low
  }
  return true
}
