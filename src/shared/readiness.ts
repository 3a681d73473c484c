// The readiness port: infra.ts implements it (database and Redis checks), ops/health.ts serves it (/readyz)
// as /readyz. It lives here so that infra.ts needs nothing from the HTTP layer.
export interface Readiness {
  /** Throws when a required backing service is unreachable. */
  check (): Promise<{ status: 'ok' | 'degraded'; checks: Record<string, { status: 'ok' | 'degraded' | 'down'; reason?: string }> }>
}
