// Retention of the partner portal's sessions and links (portal/portal.service.ts): a session that
// ended by time (an hour idle, 24 hours old) is refused whether or not its row is still there, so
// this only keeps the tables small; used and expired links are kept a day after they expire so a
// late click is told "used" or "expired" rather than "unknown". In batches like the events' prune.
import { PRUNE_EVERY_MS, pruneInBatches } from './event-prune.ts'
import type { Job } from './runner.ts'

/** What the job needs: the portal's prune (Portal.prune). */
export interface PortalSessionsPruneDeps {
  portalSessions: { prune (max: number): Promise<number> }
}

export function portalSessionsPruneJob (deps: PortalSessionsPruneDeps): Job {
  return {
    name: 'portal-sessions-prune',
    everyMs: PRUNE_EVERY_MS,
    run: () => pruneInBatches((max) => deps.portalSessions.prune(max)),
    failure: 'pruning ended portal sessions failed; the next run retries'
  }
}
