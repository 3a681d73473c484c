// The categories port.
import type { IfMatch, PageRequest, Versioned } from '../shared/store.ts'
import type { Category } from './categories.schema.ts'

export type CategoryRecord = Versioned<Category>

export interface CategoryStore {
  listCategories (page: PageRequest): Promise<CategoryRecord[]>
  getCategory (id: number): Promise<CategoryRecord | null>
  /** Each change writes its event (category.created, .updated, .deleted) at `now`, in its own transaction. */
  createCategory (input: { name: string; description?: string }, now: number): Promise<CategoryRecord>
  /** Replaces name and description. Throws not_found, precondition_failed. */
  replaceCategory (
    id: number,
    input: { name: string; description?: string },
    ifMatch: IfMatch,
    now: number
  ): Promise<CategoryRecord>
  /** Throws not_found, precondition_failed, category_in_use. */
  deleteCategory (id: number, ifMatch: IfMatch, now: number): Promise<void>
}
