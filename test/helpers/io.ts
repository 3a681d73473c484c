// The Io of the petstore command (src/cli/io.ts) in memory: what a command prints, one entry a line.
import type { Io } from '../../src/cli/io.ts'

export interface MemoryIo extends Io {
  /** stdout, one entry a line (a command that prints several lines at once gives several). */
  lines: string[]
  /** stderr, the same way. */
  errors: string[]
}

/** An Io with this environment that keeps what the command prints. */
export function memoryIo (env: Record<string, string>): MemoryIo {
  const lines: string[] = []
  const errors: string[] = []
  return { lines, errors, env, out: (l) => { lines.push(...l.split('\n')) }, err: (l) => { errors.push(...l.split('\n')) } }
}
