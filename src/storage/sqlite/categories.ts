// CategoryStore on SQLite.
import { categoryInUse } from '../../errors.ts'
import type { CategoryStore } from '../../categories/categories.store.ts'
import { catalogEvent } from '../../events/events.store.ts'
import type { IfMatch } from '../../shared/store.ts'
import { currentRow } from '../checks.ts'
import type { Db } from './database.ts'
import type { Writer } from './writer.ts'
import type { SqliteEventLog } from './events.ts'
import { CATEGORY_COLUMNS, toCategory, type CategoryRow } from '../rows.ts'

export function createSqliteCategoryStore (db: Db, writer: Writer, events: SqliteEventLog): CategoryStore {
  const byId = db.prepare(`SELECT ${CATEGORY_COLUMNS} FROM categories WHERE id = ?`)
  const list = db.prepare(`SELECT ${CATEGORY_COLUMNS} FROM categories WHERE id > ? ORDER BY id LIMIT ?`)
  const insert = db.prepare(`INSERT INTO categories (name, description) VALUES (?, ?) RETURNING ${CATEGORY_COLUMNS}`)
  const replace = db.prepare(`UPDATE categories SET name = ?, description = ?, version = version + 1 WHERE id = ? RETURNING ${CATEGORY_COLUMNS}`)
  const hasPets = db.prepare('SELECT 1 FROM pets WHERE category_id = ? LIMIT 1')
  const remove = db.prepare('DELETE FROM categories WHERE id = ?')

  const current = (id: number, ifMatch: IfMatch): CategoryRow =>
    currentRow(byId.get(id) as CategoryRow | undefined, `category ${id}`, ifMatch)

  return {
    async listCategories (page) {
      return (list.all(page.afterId ?? 0, page.limit) as unknown as CategoryRow[]).map(toCategory)
    },
    async getCategory (id) {
      const row = byId.get(id) as CategoryRow | undefined
      return row === undefined ? null : toCategory(row)
    },
    async createCategory (input, now) {
      return await writer.run(() => {
        const category = toCategory(insert.get(input.name, input.description ?? null) as unknown as CategoryRow)
        events.append([catalogEvent('category.created', category)], now)
        return category
      })
    },
    async replaceCategory (id, input, ifMatch, now) {
      return await writer.run(() => {
        const before = toCategory(current(id, ifMatch))
        const category = toCategory(replace.get(input.name, input.description ?? null, id) as unknown as CategoryRow)
        events.append([catalogEvent('category.updated', category)], now, before)
        return category
      })
    },
    async deleteCategory (id, ifMatch, now) {
      await writer.run(() => {
        current(id, ifMatch)
        if (hasPets.get(id) !== undefined) throw categoryInUse(id)
        remove.run(id)
        events.append([catalogEvent('category.deleted', { id })], now)
      })
    }
  }
}
