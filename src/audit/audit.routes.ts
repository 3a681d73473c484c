// The audit log over HTTP (admin only): the entries, newest first, and the head. Nothing here
// changes or removes an entry: the log has no other operation.
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { setNextLink } from '../routing/conditional.ts'
import { LinkHeader, NoQuery, Reply } from '../shared/schemas.ts'
import { AuditEntriesSchema, AuditHeadSchema, AuditListQuery } from './audit.schema.ts'
import type { AuditService } from './audit.service.ts'
import type { AuditEntry } from './audit.store.ts'

/** An entry as the API shows it: `at` in ISO 8601. */
export function toApiAuditEntry (entry: AuditEntry): Omit<AuditEntry, 'at'> & { at: string } {
  return { ...entry, at: new Date(entry.at).toISOString() }
}

export async function auditRoutes (fastify: FastifyInstance, { audit }: { audit: AuditService }): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const tags = ['Audit log']

  app.get('/admin/audit', {
    schema: {
      operationId: 'listAuditEntries', tags, summary: 'List audit log entries',
      description: 'Every change made by staff, an admin, the command line or the system, newest first: key administration, bans, the catalogue, stock, staff changes to orders. Filters combine; the next page, if any, is in the `Link` header, which keeps them.',
      querystring: AuditListQuery,
      response: { 200: Reply('A page of entries, newest first.', AuditEntriesSchema, LinkHeader) }
    },
    config: { role: 'admin', scope: 'keys:admin', errors: ['validation_failed'] }
  }, async (request, reply) => {
    const page = await audit.list(request.query)
    setNextLink(request, reply, page.nextCursor)
    return page.items.map(toApiAuditEntry)
  })

  app.get('/admin/audit/head', {
    schema: {
      operationId: 'getAuditHead', tags, summary: 'Get the audit log\'s head',
      description: 'How many entries the log holds and the last one\'s hash. Keep them outside the service: `petstore audit verify --known COUNT:HASH` later shows whether the entries up to that one are all still there, unchanged.',
      querystring: NoQuery,
      response: { 200: Reply('The count and the last hash.', AuditHeadSchema) }
    },
    config: { role: 'admin', scope: 'keys:admin', errors: ['validation_failed'] }
  }, async () => audit.head())
}
