// CategoryStore on SQLite.
import { AppError, notFound, preconditionFailed } from '../../errors.ts'
import type { CategoryStore } from '../../categories/categories.store.ts'
import { matchesVersion } from '../../shared/store.ts'
import type { Db, Writer } from './database.ts'
import { CATEGORY_COLUMNS, toCategory, type CategoryRow } from '../rows.ts'

export function createSqliteCategoryStore (db: Db, writer: Writer): CategoryStore {
  const byId = db.prepare(`SELECT ${CATEGORY_COLUMNS} FROM categories WHERE id = ?`)
  const list = db.prepare(`SELECT ${CATEGORY_COLUMNS} FROM categories WHERE id > ? ORDER BY id LIMIT ?`)
  const insert = db.prepare(`INSERT INTO categories (name, description) VALUES (?, ?) RETURNING ${CATEGORY_COLUMNS}`)
  const replace = db.prepare(`UPDATE categories SET name = ?, description = ?, version = version + 1 WHERE id = ? RETURNING ${CATEGORY_COLUMNS}`)
  const hasPets = db.prepare('SELECT 1 FROM pets WHERE category_id = ? LIMIT 1')
  const remove = db.prepare('DELETE FROM categories WHERE id = ?')

  function current (id: number, ifMatch: readonly number[] | null): CategoryRow {
    const row = byId.get(id) as CategoryRow | undefined
    if (row === undefined) throw notFound(`category ${id}`)
    if (!matchesVersion(ifMatch, row.version)) throw preconditionFailed()
    return row
  }

  return {
    async listCategories (page) {
      return (list.all(page.afterId ?? 0, page.limit) as unknown as CategoryRow[]).map(toCategory)
    },
    async getCategory (id) {
      const row = byId.get(id) as CategoryRow | undefined
      return row === undefined ? null : toCategory(row)
    },
    async createCategory (input) {
      return await writer.run(() => toCategory(insert.get(input.name, input.description ?? null) as unknown as CategoryRow))
    },
    async replaceCategory (id, input, ifMatch) {
      return await writer.run(() => {
        current(id, ifMatch)
        return toCategory(replace.get(input.name, input.description ?? null, id) as unknown as CategoryRow)
      })
    },
    async deleteCategory (id, ifMatch) {
      await writer.run(() => {
        current(id, ifMatch)
        if (hasPets.get(id) !== undefined) throw new AppError('category_in_use', `category ${id} still has pets; move or delete them first`)
        remove.run(id)
      })
    }
  }
}
