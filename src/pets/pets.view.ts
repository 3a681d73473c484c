// The public view of a pet (the Pet schema) from its record: what GET /pets/{petId} answers,
// and what a pet event's data becomes (events/render.ts).
import type { Pet } from './pets.schema.ts'
import type { PetRecord } from './pets.store.ts'

export const toPublicPet = ({ version: _version, ...pet }: PetRecord): Pet => pet
