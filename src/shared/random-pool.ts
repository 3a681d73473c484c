// Random bytes for ids made on every request or event (request ids, event ids): crypto-strong
// bytes drawn 4 KiB at a time, as Node's randomUUID draws its own, then handed out in order, each
// byte once. One draw per id cost about 1% of an order's CPU (docs/performance.md).
import { randomBytes } from 'node:crypto'

const DRAW_BYTES = 4096

export class RandomPool {
  /** The bytes drawn last: read what `take` gave before calling it again. */
  bytes = Buffer.alloc(0)
  #at = 0

  /** Where `n` (at most 4,096) unused random bytes begin in `bytes`. */
  take (n: number): number {
    if (this.#at + n > this.bytes.length) {
      this.bytes = randomBytes(DRAW_BYTES)
      this.#at = 0
    }
    const at = this.#at
    this.#at += n
    return at
  }
}
