// What a command may touch of the outside world, so tests run commands in-process.
export interface Io {
  out (line: string): void
  err (line: string): void
  env: Record<string, string | undefined>
  /** Resolves when the process is asked to stop (SIGTERM/SIGINT); serve waits on it. */
  stopSignal?: Promise<string>
}

export const processIo = (): Io => ({
  out: (line) => { process.stdout.write(line + '\n') },
  err: (line) => { process.stderr.write(line + '\n') },
  env: process.env,
  stopSignal: new Promise((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'))
    process.once('SIGINT', () => resolve('SIGINT'))
  })
})

/** openStores' onWait for a command: one line on stderr per wait for a database not reachable yet. */
export const databaseWaitNote = (io: Io, command: string) => (reason: string, waitedMs: number): void => {
  io.err(`petstore ${command}: the database is not reachable yet (${reason}); retrying${waitedMs > 0 ? ` (${Math.round(waitedMs / 1000)} s so far)` : ''}`)
}
