// Events to the API's shape. The store keeps each event's data as the record its store knew
// (an OrderRecord, a PetRecord, a KeyState …); it is rendered here, when read, by the view its
// catalogue row names (the feature's own, the one its GET answers with), so an event's data is
// the resource "as a GET would answer" and SQL never formats dates or views.
import { viewOf } from './catalogue.ts'
import type { ApiEvent } from './events.schema.ts'
import type { StoredEvent } from './events.store.ts'

export function renderEvent (event: StoredEvent): ApiEvent {
  return {
    id: event.id,
    type: event.type,
    createdAt: new Date(event.createdAt).toISOString(),
    data: viewOf(event.type, event.data)
  }
}
