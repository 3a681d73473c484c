// Rule 10: expired orders are swept lazily (a placement sweeps its pet first) and by this job,
// which deletes a bounded batch and returns the stock every SWEEP_EVERY_MS. It runs at start too,
// so the stock of orders that lapsed while no instance ran is back before the first request.
// Every instance sweeps: each expired order is deleted once (the database decides), so two
// instances only share the work.
import { SWEEP_EVERY_MS, type OrderService } from '../orders/orders.service.ts'
import type { Job } from './runner.ts'

export function orderSweepJob (deps: { orders: OrderService }): Job {
  return {
    name: 'order-sweep',
    everyMs: SWEEP_EVERY_MS,
    run: () => deps.orders.sweep(),
    atStart: true,
    failure: 'the sweep of expired orders failed; the next one retries'
  }
}
