// Readable log lines for a person at a terminal (LOG_FORMAT, docs/configuration.md). pino-pretty
// does the formatting; this module only says which fields a request line shows. It is imported
// only when the lines are pretty: a server logging JSON never loads it.
import type { DestinationStream } from 'pino'
import type { LogFormat } from '../config.ts'

/** Pretty when asked, or when left to us and standard output is a terminal (a person reads it). */
export function prettyWanted (format: LogFormat, stdoutIsTerminal: boolean): boolean {
  return format === 'pretty' || (format === 'auto' && stdoutIsTerminal)
}

type Log = Record<string, unknown>

/** A "request completed" (or "request errored") line of http/request-log.ts. */
const isRequestLine = (log: Log): boolean => typeof log.method === 'string' && typeof log.statusCode === 'number'

/** `GET /v1/pets 200 3.2 ms key 7`, then the error code when the answer was one. */
function requestMessage (log: Log, messageKey: string): string {
  if (!isRequestLine(log)) return String(log[messageKey] ?? '')
  const ms = typeof log.responseTime === 'number' ? log.responseTime.toFixed(1) : '?'
  const key = log.keyId === undefined ? '' : ` key ${String(log.keyId)}`
  const code = typeof log.code === 'string' ? ` ${log.code}` : ''
  return `${String(log.method)} ${String(log.url)} ${String(log.statusCode)} ${ms} ms${key}${code}`
}

/**
 * The fields the request message already shows are left out of its line (pino-pretty skips a
 * field whose prettifier gives undefined, and hands the prettifier the line without its ignored
 * fields: so none of these is ignored); other lines keep them, as JSON. A prettifier must give a
 * string: anything else (a number) stops pino-pretty's stream, and every later line is lost.
 */
const shownInMessage = (value: unknown, _key: string, log: object): string =>
  (isRequestLine(log as Log) ? undefined : JSON.stringify(value)) as string

/**
 * pino-pretty on standard output, synchronous (a person's terminal, not a hot path; nothing is
 * lost at exit). Colours when the terminal supports them (pino-pretty's own test: NO_COLOR,
 * FORCE_COLOR, a TTY).
 */
export async function prettyStdout (): Promise<DestinationStream> {
  const { default: pretty } = await import('pino-pretty')
  return pretty({
    destination: 1,
    sync: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname',
    messageFormat: requestMessage,
    customPrettifiers: {
      method: shownInMessage,
      url: shownInMessage,
      statusCode: shownInMessage,
      responseTime: shownInMessage,
      keyId: shownInMessage,
      code: shownInMessage,
      // A failed request keeps its id, which its error answer quotes (requestId).
      reqId: (value, key, log) => typeof (log as Log).code === 'string'
        ? JSON.stringify(value)
        : shownInMessage(value, key, log)
    }
  })
}
