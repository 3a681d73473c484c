// The logger's lines on stdout (server.ts, createLogger without a destination): gathered into
// chunks of about 4 KiB, but a line waits at most LOG_FLUSH_MS, and the process's exit writes what
// is left. A child process logs and then exits or is killed; its stdout, read by the parent, holds
// every line in order.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { test } from 'node:test'
import { LOG_FLUSH_MS } from '../../src/server.ts'

const SERVER = new URL('../../src/server.ts', import.meta.url).href

/**
 * Runs `body` (after `const logger = createLogger(...)`) in a child; returns its stdout's JSON
 * lines' messages and how it ended.
 */
async function child (body: string): Promise<{ messages: string[]; signal: NodeJS.Signals | null }> {
  const source = `import { createLogger } from ${JSON.stringify(SERVER)}\nconst logger = createLogger({ logLevel: 'info' })\n${body}`
  const proc = spawn(process.execPath, ['--input-type=module', '-e', source], { stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  proc.stdout.setEncoding('utf8').on('data', (chunk: string) => { out += chunk })
  const signal = await new Promise<NodeJS.Signals | null>((resolve) => proc.on('close', (_code, s) => { resolve(s) }))
  const messages = out.split('\n').filter((line) => line !== '').map((line) => (JSON.parse(line) as { msg: string }).msg)
  return { messages, signal }
}

test('a lone line reaches stdout within LOG_FLUSH_MS: a SIGKILL after that loses nothing', async () => {
  // Fault caught: lines held until the buffer fills (no deadline) are lost to the kill.
  const { messages, signal } = await child(`logger.info('one'); logger.info('two')\nsetTimeout(() => process.kill(process.pid, 'SIGKILL'), ${LOG_FLUSH_MS * 3})`)
  assert.equal(signal, 'SIGKILL')
  assert.deepEqual(messages, ['one', 'two'])
})

test('many lines, one of them longer than a chunk, all written in order; the rest at exit', async () => {
  // Faults caught: a chunk written out of order, a long line split or lost, the tail not written at exit.
  const { messages } = await child(`for (let i = 0; i < 3000; i++) logger.info(i === 1500 ? 'x'.repeat(20000) : String(i))\nprocess.exit(0)`)
  assert.equal(messages.length, 3000)
  messages.forEach((message, i) => { assert.equal(message, i === 1500 ? 'x'.repeat(20000) : String(i)) })
})
