// Whether the process exports traces: the OpenTelemetry environment variables decide, as every
// OpenTelemetry SDK reads them (docs/configuration.md). Imports nothing, so asking loads nothing.

export type Env = Readonly<Record<string, string | undefined>>

/**
 * How a span may show a URL and any other text: the logs' redaction (http/redact.ts), which the
 * entry hands in (telemetry/ does not import the pipeline). No span is exported without it.
 */
export interface SpanRedaction {
  url (url: string): string
  text (text: string): string
}

export function tracingEnabled (env: Env): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== '')
  if (exporters.includes('none')) return false
  if (exporters.includes('otlp')) return true
  return nonEmpty(env.OTEL_EXPORTER_OTLP_ENDPOINT) || nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
}

const nonEmpty = (value: string | undefined): boolean => value !== undefined && value.trim() !== ''

/**
 * Starts tracing when the environment asks for it: the SDK is imported here and only here, before
 * the server's modules, so that the drivers it instruments are patched as they load.
 */
export async function startTracingIfEnabled (
  env: Env,
  redaction: SpanRedaction
): Promise<{ shutdown (): Promise<void> } | null> {
  if (!tracingEnabled(env)) return null
  const { startTracing } = await import('./sdk.ts')
  return startTracing(env, redaction)
}
