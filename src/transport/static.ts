// The heavy answers that never change while the process runs: the OpenAPI document (about
// 180 KB of JSON), the docs page's scripts (Scalar's bundle is 4.35 MB) and the console's files.
// Each is compressed once, in Node's thread pool, the first time it is asked for (not at start:
// the process stays small until someone reads the docs), and then served from memory as brotli,
// gzip or as is, whichever the client accepts, with an ETag that lets a client revalidate for a
// 304. servePage serves a page and its versioned assets: /docs and /console both use it.
import { createHash } from 'node:crypto'
import { promisify } from 'node:util'
import { brotliCompress as brotliCallback, constants, gzip as gzipCallback } from 'node:zlib'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'

const brotli = promisify(brotliCallback)
const gzip = promisify(gzipCallback)

export type Coding = 'br' | 'gzip' | 'identity'

export interface StaticEntity {
  contentType: string
  /** The quoted tag of the uncompressed bytes; a compressed variant appends `-br` or `-gzip`. */
  etag: string
  /** sha256 of the bytes, hex: names an immutable asset. */
  hash: string
  bodies: Record<Coding, Buffer>
}

/**
 * Brotli's best quality takes 25 s on the 4 MB bundle here; quality 6 takes under a second for
 * 14% more bytes than 11. Small bodies (the document) get the best quality: 0.2 s, once.
 */
function brotliQuality (size: number): number {
  return size > 1024 * 1024 ? 6 : constants.BROTLI_MAX_QUALITY
}

export async function staticEntity (content: Buffer | string, contentType: string): Promise<StaticEntity> {
  const identity = typeof content === 'string' ? Buffer.from(content) : content
  const hash = createHash('sha256').update(identity).digest('hex')
  const [br, gzipped] = await Promise.all([
    brotli(identity, {
      params: {
        [constants.BROTLI_PARAM_QUALITY]: brotliQuality(identity.length),
        [constants.BROTLI_PARAM_SIZE_HINT]: identity.length
      }
    }),
    gzip(identity, { level: 9 })
  ])
  return { contentType, etag: `"${hash.slice(0, 32)}"`, hash, bodies: { br, gzip: gzipped, identity } }
}

/**
 * The coding to send: the one with the highest q-value among br and gzip (br on a tie, it is
 * smaller), `*` standing for both; identity when neither is acceptable. RFC 9110 section 12.5.3.
 */
export function chooseCoding (acceptEncoding: string | undefined): Coding {
  const q: Partial<Record<string, number>> = {}
  for (const entry of (acceptEncoding ?? '').split(',')) {
    const [coding = '', ...parameters] = entry.split(';').map((part) => part.trim().toLowerCase())
    if (coding === '') continue
    const given = parameters.find((parameter) => parameter.startsWith('q='))
    const value = given === undefined ? 1 : Number(given.slice(2))
    q[coding] = Number.isFinite(value) ? value : 0
  }
  const of = (coding: string): number => q[coding] ?? q['*'] ?? 0
  const br = of('br')
  const gz = of('gzip')
  if (br > 0 && br >= gz) return 'br'
  if (gz > 0) return 'gzip'
  return 'identity'
}

/** Whether If-None-Match names this entity in any coding (weak comparison, RFC 9110 section 13.1.2). */
function matches (ifNoneMatch: string | undefined, entity: StaticEntity): boolean {
  if (ifNoneMatch === undefined) return false
  const base = entity.etag.slice(1, -1)
  return ifNoneMatch.split(',').some((tag) => {
    const t = tag.trim().replace(/^W\//, '')
    return t === '*' || t === `"${base}"` || t === `"${base}-br"` || t === `"${base}-gzip"`
  })
}

/** Sends the entity in the coding the client accepts, or 304 when the client's copy is current. */
export function sendStatic (
  request: FastifyRequest,
  reply: FastifyReply,
  entity: StaticEntity,
  cacheControl: string
): FastifyReply {
  const coding = chooseCoding(request.headers['accept-encoding'])
  reply
    .header('cache-control', cacheControl)
    .header('vary', 'accept-encoding')
    .header('x-content-type-options', 'nosniff')
    // A strong tag names exact bytes, so each coding has its own.
    .header('etag', coding === 'identity' ? entity.etag : `${entity.etag.slice(0, -1)}-${coding}"`)
  if (matches(request.headers['if-none-match'], entity)) return reply.code(304).send()
  if (coding !== 'identity') reply.header('content-encoding', coding)
  return reply.type(entity.contentType).send(entity.bodies[coding])
}

/**
 * The result of build(), made on the first call and shared by the later ones; a failure is not
 * kept: the next call builds again (one failure must not be served for the life of the
 * process, issue 18).
 */
export function onceSucceeded<T> (build: () => Promise<T>): () => Promise<T> {
  let promise: Promise<T> | undefined
  return () => {
    if (promise === undefined) {
      const attempt = Promise.resolve().then(build)
      promise = attempt
      attempt.catch(() => { if (promise === attempt) promise = undefined })
    }
    return promise
  }
}

/** A file served under a versioned name, which changes with its bytes. */
export interface Asset extends StaticEntity {
  /** The base name, the first 16 hex digits of the sha256, the extension: `console.1a2b….js`. */
  name: string
}

export async function versionedAsset (
  content: Buffer,
  baseName: string,
  extension: string,
  contentType: string
): Promise<Asset> {
  const entity = await staticEntity(content, contentType)
  return { ...entity, name: `${baseName}.${entity.hash.slice(0, 16)}.${extension}` }
}

/** A versioned asset's name changes with its bytes, so a browser may keep it for a year unasked. */
const IMMUTABLE = 'public, max-age=31536000, immutable'

export interface StaticPage {
  /** The HTML page, which names its assets by their versioned names. */
  page: StaticEntity
  assets: Asset[]
}

export interface ServePageOptions {
  /** The page's path (`/docs`); its assets are served under `<path>/assets/`. */
  path: string
  /**
   * Makes the page and its assets, given the assets' URL prefix; called on the first request (again
   * after a failure).
   */
  load: (assetsPath: string) => Promise<StaticPage>
  /** Headers of the page's answers (its Content-Security-Policy). */
  pageHeaders?: Record<string, string>
}

/**
 * GET <path>: the page, revalidated on every use (`no-cache`: it names the current assets, so a
 * browser gets a 304 while they are the same); GET <path>/assets/NAME: an asset by its versioned
 * name, kept for a year (immutable), or 404.
 */
export function servePage (app: FastifyInstance, options: ServePageOptions): void {
  const { path, pageHeaders = {} } = options
  const assetsPath = `${app.prefix}${path}/assets/`
  const load = onceSucceeded(async () => {
    const { page, assets } = await options.load(assetsPath)
    return { page, byName: new Map(assets.map((asset) => [asset.name, asset])) }
  })

  app.get(path, { schema: { hide: true } }, async (request, reply) => {
    const { page } = await load()
    reply.headers(pageHeaders)
    return sendStatic(request, reply, page, 'no-cache')
  })

  app.get<{ Params: { '*': string } }>(`${path}/assets/*`, { schema: { hide: true } }, async (request, reply) => {
    const asset = (await load()).byName.get(request.params['*'])
    if (asset === undefined) {
      reply.callNotFound()
      return reply
    }
    return sendStatic(request, reply, asset, IMMUTABLE)
  })
}
