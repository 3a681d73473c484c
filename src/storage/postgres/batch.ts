// Group commit on the API side (docs/performance.md, "PostgreSQL orders"): the calls that arrive
// while a batch is in flight wait together and go as the next batch, one round trip and one
// transaction (so one WAL flush) for all of them. An idle batcher sends a call at once, alone, so
// a lone request waits for nothing; under load the batches grow by themselves, up to maxBatch.
//
// A call is answered only when its batch's promise settles, that is, once the database has
// answered the whole statement: for an autocommit statement, after its COMMIT (and the WAL flush
// synchronous_commit asks for). Nothing is answered from a partial result.

export interface BatcherOptions<I, R> {
  /** Most calls in one batch. */
  maxBatch: number
  /** Most batches in flight at once; calls beyond wait and join the next batch. */
  maxInFlight: number
  /** Runs one batch: one result per item, in the items' order. A rejection fails every item of the batch. */
  run (items: readonly I[]): Promise<readonly R[]>
}

interface Waiting<I, R> { item: I; resolve (result: R): void; reject (error: unknown): void }

/** The function that queues one call and resolves with its result once its batch has run. */
export function createBatcher<I, R> (options: BatcherOptions<I, R>): (item: I) => Promise<R> {
  const queue: Waiting<I, R>[] = []
  let inFlight = 0

  function send (): void {
    const batch = queue.splice(0, options.maxBatch)
    inFlight++
    let ran: Promise<readonly R[]>
    try {
      ran = options.run(batch.map((w) => w.item))
    } catch (error) {
      ran = Promise.reject(error)
    }
    ran.then((results) => {
      next()
      // After the next batch's write: see next.
      process.nextTick(() => { for (let i = 0; i < batch.length; i++) batch[i]!.resolve(results[i]!) })
    }, (error: unknown) => {
      next()
      for (const w of batch) w.reject(error)
    })
  }

  /**
   * The batch in flight has settled: the next goes before its callers are answered. The pool
   * hands a connection over in a process.nextTick, which runs once the microtasks are done, so a
   * next batch sent after the answers (each caller's continuation, a response written) reached
   * the database only once they were all written, and the database waited for the API. Its
   * callers are answered in a tick queued after the pool's, so the database runs the next batch
   * while the API writes this one's responses (docs/performance.md, "PostgreSQL orders").
   */
  function next (): void {
    inFlight--
    // A batch that settled left room for one.
    if (queue.length > 0) send()
  }

  return (item) => new Promise<R>((resolve, reject) => {
    queue.push({ item, resolve, reject })
    if (inFlight < options.maxInFlight) send()
  })
}
