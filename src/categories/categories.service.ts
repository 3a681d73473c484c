// The category rules: a category with pets cannot be deleted (the store enforces it atomically).
import { notFound } from '../errors.ts'
import type { Clock } from '../shared/clock.ts'
import type { IfMatch } from '../shared/store.ts'
import { pageRequest, toPage, type Page } from '../shared/pagination.ts'
import type { CategoryListQuery, NewCategory } from './categories.schema.ts'
import type { CategoryRecord, CategoryStore } from './categories.store.ts'

export interface CategoryService {
  list (query: CategoryListQuery): Promise<Page<CategoryRecord>>
  get (id: number): Promise<CategoryRecord>
  create (input: NewCategory): Promise<CategoryRecord>
  replace (id: number, input: NewCategory, ifMatch: IfMatch): Promise<CategoryRecord>
  remove (id: number, ifMatch: IfMatch): Promise<void>
}

export function createCategoryService (categories: CategoryStore, clock: Clock): CategoryService {
  return {
    async list (query) {
      const page = pageRequest(query)
      return toPage(await categories.listCategories(page), page)
    },
    async get (id) {
      const category = await categories.getCategory(id)
      if (category === null) throw notFound(`category ${id}`)
      return category
    },
    async create (input) {
      return await categories.createCategory(input, clock.now())
    },
    async replace (id, input, ifMatch) {
      return await categories.replaceCategory(id, input, ifMatch, clock.now())
    },
    async remove (id, ifMatch) {
      await categories.deleteCategory(id, ifMatch, clock.now())
    }
  }
}
