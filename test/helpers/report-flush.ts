// Loaded first in every test process (`--import` in package.json's test scripts). With
// --test-force-exit, node:test ends a test file's process as soon as its last test has ended,
// and the process reports its results to the runner over stdout, a pipe, which Node writes
// asynchronously on Linux: the exit cut off the last reports (nodejs/node#64833), so a run
// counted fewer tests than it ran and still passed (a CI run here reported 1,296 of 1,331: the
// end of test/ratelimit/memory.test.ts). Writes to a blocking stdout finish before the exit.
// test/harness/report-flush.test.ts shows the loss and this cure.
const stdout = process.stdout as unknown as { _handle?: { setBlocking?: (blocking: boolean) => unknown } }
stdout._handle?.setBlocking?.(true)
