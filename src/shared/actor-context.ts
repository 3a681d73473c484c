// Who is making a change, for the audit log (issue 32): the request's key, a CLI user or the
// system, with the request id and client address. This is the one context object every port's
// changes are made in (docs/architecture.md, "The audit actor"):
//
// - set at the three entries, and only there: the access step for a request's handler
//   (http/access.ts, actorStep), `petstore keys …` (cli/keys.ts), the job runner (jobs/runner.ts);
// - declared by the ports' engines (storage/stores.ts: each engine's context has `actor`, an
//   ActorSource), so a store that audits receives it when it is built, never from a global;
// - read in one place: the audit door of each engine (storage/*/audit.ts), which takes it as a
//   parameter, in the transaction of the change.
//
// SQLite's writer runs its callbacks later, in a batch, so the engine binds each write to the
// context of its caller when it is queued (storage/sqlite/index.ts): a batch of several
// requests' writes names each one's own actor.
import { AsyncLocalStorage } from 'node:async_hooks'

/** Who acted: a key (its id and role), a user of the command line, or the system itself. */
export type AuditActor =
  /** `via: 'portal'`: the request came through the partner portal's door (/portal/api/v1), acting as the key. */
  | { type: 'key'; keyId: number; role: string; via?: 'portal' }
  | { type: 'cli'; user: string }
  | { type: 'system' }
  /** A request without a valid key (reporting leaked keys): known only by its address. */
  | { type: 'address' }

export interface ActorContext {
  readonly actor: AuditActor
  readonly requestId: string | null
  readonly address: string | null
}

export const SYSTEM_CONTEXT: ActorContext = { actor: { type: 'system' }, requestId: null, address: null }

/** Who makes the change being made now: what an engine's context hands the stores that audit. */
export type ActorSource = () => ActorContext

const storage = new AsyncLocalStorage<ActorContext>()

/**
 * The actor of the work running now; the system when nothing set one (a ban, a seed). The
 * engines' ActorSource: only the engines' index.ts name it, to hand it to their stores.
 */
export function currentActor (): ActorContext {
  return storage.getStore() ?? SYSTEM_CONTEXT
}

/** Runs fn (and everything it starts) as `context`. */
export function withActor<T> (context: ActorContext, fn: () => T): T {
  return storage.run(context, fn)
}

/**
 * fn bound to the actor of the caller, for work run later from another context (a write queued
 * on SQLite's writer). Without an actor set, fn itself: nothing is allocated.
 */
export function bindActor<T> (fn: () => T): () => T {
  const context = storage.getStore()
  return context === undefined ? fn : () => storage.run(context, fn)
}
