// Webhook deliveries (webhooks/dispatcher.ts): every WEBHOOK_POLL_MS a round fans the feed's new
// events out into deliveries and starts the due attempts (and an attempt that ends while its
// endpoint had its full share asks for the next round at once), so a first attempt starts within about
// a poll of the commit on any instance. At stop, a second job waits (bounded) for the attempts in
// flight to be recorded; one cut short is retried when its lease expires. A third removes what
// attempts sent and got once it is past its retention (attempt-prune.ts).
import type { Clock } from '../shared/clock.ts'
import type { Dispatcher } from '../webhooks/dispatcher.ts'
import { attemptPruneJob } from './attempt-prune.ts'
import type { Job } from './runner.ts'

export function webhookJobs (deps: { dispatcher: Dispatcher; webhookPollMs: number; clock: Clock }): Job[] {
  return [
    attemptPruneJob(deps),
    {
      name: 'webhook-dispatch',
      everyMs: deps.webhookPollMs,
      run: () => deps.dispatcher.tick(),
      failure: 'a webhook dispatch round failed; the next one retries'
    },
    {
      name: 'webhook-drain',
      everyMs: 0,
      run: () => deps.dispatcher.drain(),
      atStop: true
    }
  ]
}
