// CategoryStore on PostgreSQL. Changes lock the category row first (SELECT ... FOR UPDATE).
import { categoryInUse } from '../../errors.ts'
import type { CategoryStore } from '../../categories/categories.store.ts'
import { catalogEvent } from '../../events/events.store.ts'
import type { IfMatch } from '../../shared/store.ts'
import { currentRow } from '../checks.ts'
import type { Db, Tx } from './database.ts'
import { onConstraint } from './errors.ts'
import { appendEvents } from './events.ts'
import { CATEGORY_COLUMNS, toCategory, type CategoryRow } from '../rows.ts'

async function lockCurrent (tx: Tx, id: number, ifMatch: IfMatch): Promise<CategoryRow> {
  return currentRow(await tx.first<CategoryRow>(`SELECT ${CATEGORY_COLUMNS} FROM categories WHERE id = $1 FOR UPDATE`, [id]), `category ${id}`, ifMatch)
}

export function createPostgresCategoryStore (db: Db): CategoryStore {
  return {
    async listCategories (page) {
      return (await db.query<CategoryRow>(`SELECT ${CATEGORY_COLUMNS} FROM categories WHERE id > $1 ORDER BY id LIMIT $2`, [page.afterId ?? 0, page.limit])).map(toCategory)
    },
    async getCategory (id) {
      const row = await db.first<CategoryRow>(`SELECT ${CATEGORY_COLUMNS} FROM categories WHERE id = $1`, [id])
      return row === undefined ? null : toCategory(row)
    },
    async createCategory (input, now) {
      // A transaction, so the category and its event commit together.
      return db.transaction(async (tx) => {
        const row = await tx.first<CategoryRow>(`INSERT INTO categories (name, description) VALUES ($1, $2) RETURNING ${CATEGORY_COLUMNS}`, [input.name, input.description ?? null])
        const category = toCategory(row!)
        await appendEvents(tx, [catalogEvent('category.created', category)], now)
        return category
      })
    },
    async replaceCategory (id, input, ifMatch, now) {
      return db.transaction(async (tx) => {
        const before = toCategory(await lockCurrent(tx, id, ifMatch))
        const row = await tx.first<CategoryRow>(
          `UPDATE categories SET name = $1, description = $2, version = version + 1 WHERE id = $3 RETURNING ${CATEGORY_COLUMNS}`,
          [input.name, input.description ?? null, id])
        const category = toCategory(row!)
        await appendEvents(tx, [catalogEvent('category.updated', category)], now, before)
        return category
      })
    },
    async deleteCategory (id, ifMatch, now) {
      await db.transaction(async (tx) => {
        // The row lock makes a concurrent pet insert into this category wait for us (its
        // foreign key check needs a share lock on the row), and then fail: no orphan pet.
        await lockCurrent(tx, id, ifMatch)
        if (await tx.first('SELECT 1 FROM pets WHERE category_id = $1 LIMIT 1', [id]) !== undefined) throw categoryInUse(id)
        await tx.query('DELETE FROM categories WHERE id = $1', [id]).catch(onConstraint({ pets_category_id_fkey: () => categoryInUse(id) }))
        await appendEvents(tx, [catalogEvent('category.deleted', { id })], now)
      })
    }
  }
}
