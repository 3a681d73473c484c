// The public view of a category (the Category schema) from its record: what GET
// /categories/{categoryId} answers, and what a category event's data becomes (events/render.ts).
import type { Category } from './categories.schema.ts'
import type { CategoryRecord } from './categories.store.ts'

export const toPublicCategory = ({ version: _version, ...category }: CategoryRecord): Category => category
