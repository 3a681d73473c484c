// The guard of one app: the access service every request passes, and what a key change does to
// it. app.ts builds it before Fastify, so that Fastify's own answers (a malformed URL) are charged
// through it too, and hands `onKeyChanged` to the features that change keys.
import { createAccessService, type AccessService, type AccessServiceOptions } from './access.service.ts'
import { localKeyEvents, type KeyEvents } from './key-events.ts'

export interface GuardOptions extends Omit<AccessServiceOptions, 'keyCacheMs' | 'onObserverError'> {
  /** How long a resolved key is reused (key-cache.ts); its default when absent. */
  keyCacheMs?: number | undefined
  /** Key changes from and to the other instances (infra.ts); this app alone when absent. */
  keyEvents?: KeyEvents | undefined
  /** Where an observer's failure is logged (the app's logger); nowhere when absent. */
  log?: { error (fields: object, message: string): void } | undefined
}

export interface Guard {
  access: AccessService
  /**
   * A key changed (revoked, rotated, its role or plan): it is forgotten here at once, and on the
   * other instances as soon as the message arrives (Redis), else within the key cache's 2 s.
   */
  readonly onKeyChanged: (record: { quotaKeyId: number }) => void
}

export function createGuard (options: GuardOptions): Guard {
  const { keyCacheMs, keyEvents = localKeyEvents(), log, ...rest } = options
  const access = createAccessService({
    ...rest,
    ...(keyCacheMs !== undefined && { keyCacheMs }),
    onObserverError: (error) => { log?.error({ err: error }, 'an access observer failed; the request was answered all the same') }
  })
  keyEvents.subscribe((keyId) => { access.forgetKey(keyId) })
  return {
    access,
    onKeyChanged: ({ quotaKeyId }) => {
      access.forgetKey(quotaKeyId)
      keyEvents.publish(quotaKeyId)
    }
  }
}
