// Which event types a webhook may subscribe to, and who may see each: the event catalogue's rules
// (events/catalogue.ts), named here for the webhook service's checks made before anything is
// stored: a subscription to a type its owner may never see is refused, and the fan-out delivers
// an event only to an owner who may see it.
export { isKnownPattern, matchesTypes, mayEverSee, maySee, typeFilterOf } from '../events/catalogue.ts'
