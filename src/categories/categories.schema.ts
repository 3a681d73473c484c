// The public contract of categories: the Category resource and our bounds (docs/product.md section 5).
// Examples name the records `serve --sample-data` loads (category 1 is Dogs).
import { Type, type Static } from 'typebox'
import { IdParam, Int64, MULTILINE_TEXT, Name, PageQuery } from '../shared/schemas.ts'

const categoryIdParams = (example: number) =>
  Type.Object({ categoryId: IdParam('The category id.', [example]) }, { additionalProperties: false })
export const CategoryIdParams = categoryIdParams(1)
/** deleteCategory's example deletes the one sample category without pets (6, Rabbits). */
export const DeleteCategoryIdParams = categoryIdParams(6)

const Description = Type.String({ maxLength: 500, pattern: MULTILINE_TEXT, description: 'Short description of the category, at most 500 characters; tabs and line breaks are allowed, no other control character.' })

export const NewCategorySchema = Type.Object({
  name: Name('Category name (for example a kind of animal), 1 to 100 characters.'),
  description: Type.Optional(Description)
}, { title: 'NewCategory', additionalProperties: false, description: 'The input shape of a category. On PUT, a missing `description` removes it.', examples: [{ name: 'Dogs', description: 'Loyal companions of every size.' }] })
export type NewCategory = Static<typeof NewCategorySchema>

export const CategorySchema = Type.Object({
  id: Int64({ description: 'Unique identifier, assigned on creation.' }),
  name: Type.String({ description: 'Category name.' }),
  description: Type.Optional(Type.String({ description: 'Short description of the category.' }))
}, { title: 'Category', additionalProperties: false, examples: [{ id: 1, name: 'Dogs', description: 'Loyal companions of every size.' }] })
export type Category = Static<typeof CategorySchema>

export const CategoriesSchema = Type.Array(CategorySchema, {
  title: 'Categories',
  examples: [[
    { id: 1, name: 'Dogs', description: 'Loyal companions of every size.' },
    { id: 2, name: 'Cats', description: 'Independent, curious and fond of naps.' }
  ]]
})

export const CategoryListQuery = Type.Object({ ...PageQuery }, { additionalProperties: false })
export type CategoryListQuery = Static<typeof CategoryListQuery>
