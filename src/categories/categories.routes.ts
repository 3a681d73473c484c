// Categories over HTTP: schema, one service call, status code.
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { etagOf, ifMatchOf, setNextLink } from '../routing/conditional.ts'
import { Reply, ETagHeader, IfMatchHeaders, LinkHeader, LocationHeader, NoContent, NoQuery } from '../shared/schemas.ts'
import {
  CategoriesSchema,
  CategoryIdParams,
  DeleteCategoryIdParams,
  CategoryListQuery,
  CategorySchema,
  NewCategorySchema
} from './categories.schema.ts'
import type { CategoryService } from './categories.service.ts'
import { toPublicCategory } from './categories.view.ts'

export interface CategoryRoutesOptions { categories: CategoryService }

export async function categoryRoutes (fastify: FastifyInstance, { categories }: CategoryRoutesOptions): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const tags = ['Categories']

  app.get('/categories', {
    schema: {
      operationId: 'listCategories', tags, summary: 'List categories',
      description: 'Categories in id order. The next page, if any, is in the `Link: <…>; rel="next"` header.',
      querystring: CategoryListQuery,
      response: { 200: Reply('A page of categories.', CategoriesSchema, LinkHeader) }
    },
    config: { role: 'customer', scope: 'catalog:read', errors: ['validation_failed'] }
  }, async (request, reply) => {
    const page = await categories.list(request.query)
    setNextLink(request, reply, page.nextCursor)
    return page.items.map(toPublicCategory)
  })

  app.post('/categories', {
    schema: {
      operationId: 'createCategory', tags, summary: 'Create a category',
      description: 'Creates a category. Names need not be unique.',
      querystring: NoQuery, body: NewCategorySchema,
      response: { 201: Reply('The category, as created.', CategorySchema, { ...LocationHeader, ...ETagHeader }) }
    },
    config: { role: 'staff', scope: 'catalog:write', errors: ['validation_failed'] }
  }, async (request, reply) => {
    const category = await categories.create(request.body)
    reply.code(201).header('location', `/v1/categories/${category.id}`).header('etag', etagOf(category))
    return toPublicCategory(category)
  })

  app.get('/categories/:categoryId', {
    schema: {
      operationId: 'getCategory', tags, summary: 'Get a category',
      description: 'The category, with its `ETag`.',
      params: CategoryIdParams, querystring: NoQuery,
      response: { 200: Reply('The category.', CategorySchema, ETagHeader) }
    },
    config: { role: 'customer', scope: 'catalog:read', errors: ['validation_failed', 'not_found'] }
  }, async (request, reply) => {
    const category = await categories.get(request.params.categoryId)
    reply.header('etag', etagOf(category))
    return toPublicCategory(category)
  })

  app.put('/categories/:categoryId', {
    schema: {
      operationId: 'replaceCategory', tags, summary: 'Replace a category',
      description: 'Replaces name and description (a missing description removes it). Honours `If-Match`.',
      params: CategoryIdParams, querystring: NoQuery, headers: IfMatchHeaders, body: NewCategorySchema,
      response: { 200: Reply('The updated category.', CategorySchema, ETagHeader) }
    },
    config: { role: 'staff', scope: 'catalog:write', errors: ['validation_failed', 'not_found', 'precondition_failed'] }
  }, async (request, reply) => {
    const category = await categories.replace(request.params.categoryId, request.body, ifMatchOf(request))
    reply.header('etag', etagOf(category))
    return toPublicCategory(category)
  })

  app.delete('/categories/:categoryId', {
    schema: {
      operationId: 'deleteCategory', tags, summary: 'Delete a category',
      description: 'A category that still has pets cannot be deleted. Honours `If-Match`.',
      params: DeleteCategoryIdParams, querystring: NoQuery, headers: IfMatchHeaders,
      response: { 204: NoContent('The category is deleted.') }
    },
    config: { role: 'staff', scope: 'catalog:write', errors: ['validation_failed', 'not_found', 'precondition_failed', 'category_in_use'] }
  }, async (request, reply) => {
    await categories.remove(request.params.categoryId, ifMatchOf(request))
    return reply.code(204).send(null)
  })
}
