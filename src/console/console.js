/* global document, window, Element, setTimeout, setInterval, sessionStorage, fetch, location, history,
   FormData, URLSearchParams, navigator, getSelection */
// The operator console (docs/product.md section 10). Plain DOM, one module, no framework.
// Rules kept here:
// - The admin key lives in sessionStorage only (this tab), goes out in X-API-Key only, never in
//   a URL, localStorage or a cookie; "Sign out" removes it.
// - Every value from the API is inserted with textContent (or an SVG text node), never as HTML.
// - Everything goes through the public API with the admin key (/v1/admin/..., and /v1/webhooks and
//   /v1/events for the webhook views), as any client could.
// - Writes send If-Match with the key's ETag where the API honours it (PATCH, DELETE); a 412 is
//   explained and the key is shown again as it now is.
const STORAGE_KEY = 'petstore.console.apiKey'
const DAY_MS = 86_400_000
const EXPIRING_WITHIN_MS = 7 * DAY_MS // accounts/keys.status.ts

const $ = (id) => document.getElementById(id)
const views = ['sign-in', 'keys-view', 'key-view', 'deprecations-view', 'webhooks-view', 'webhook-view', 'audit-view']

// ---- the helpers /console shares with /portal (shared.js, loaded first) ---------------------

const { el, link, cell, countdown, usageChart, turns } = globalThis.PetstoreUI
const dateTime = globalThis.PetstoreUI.utcText
const nextFromLink = (header, base = '/v1/admin/keys') => globalThis.PetstoreUI.nextFromLink(header, base)

function say (text) { $('status').textContent = text; $('alert').textContent = '' }
function warn (text) { $('alert').textContent = text; $('status').textContent = '' }

// ---- the API -------------------------------------------------------------------------------

class ApiError extends Error {
  constructor (status, body) {
    super(body?.message ?? `HTTP ${status}`)
    this.status = status
    this.code = body?.code ?? null
  }
}

const apiKey = () => sessionStorage.getItem(STORAGE_KEY)

async function api (path, { method = 'GET', body, ifMatch, key = apiKey() } = {}) {
  const headers = { accept: 'application/json', 'x-api-key': key ?? '' }
  if (body !== undefined) headers['content-type'] = 'application/json'
  if (ifMatch !== undefined) headers['if-match'] = ifMatch
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'omit',
    cache: 'no-store',
    referrerPolicy: 'no-referrer'
  })
  const text = response.status === 204 ? '' : await response.text()
  const data = text === '' ? null : JSON.parse(text)
  if (!response.ok) {
    if (response.status === 401 && key === apiKey()) signOut('Your key stopped working (it was revoked, expired or replaced). Sign in again.')
    throw new ApiError(response.status, data)
  }
  return { data, etag: response.headers.get('etag'), link: response.headers.get('link') }
}

function explain (error) {
  if (error instanceof ApiError) {
    if (error.status === 412) return 'Someone else changed this key after you loaded it, so nothing was changed. The page now shows the key as it is; check it and try again.'
    if (error.status === 429) return `The API is limiting your admin key: ${error.message}`
    return `${error.message} (${error.code ?? error.status})`
  }
  return `The API could not be reached: ${error.message}`
}

// ---- status, as accounts/keys.status.ts decides it ----------------------------------------------

function statusOf (key, now = Date.now()) {
  if (key.revokedAt !== null) return 'revoked'
  if (key.replacedBy !== null) return 'rotated'
  if (key.expiresAt !== null && now >= Date.parse(key.expiresAt)) return 'expired'
  if (key.ban !== null && Date.parse(key.ban.until) > now) return 'banned'
  if (key.expiresAt !== null && Date.parse(key.expiresAt) - now <= EXPIRING_WITHIN_MS) return 'expiring'
  return 'active'
}

function statusNode (key) {
  const status = statusOf(key)
  const span = el('span', { class: `state-${status}`, 'data-status': status, text: status })
  const wrap = el('span', {}, span)
  if (status === 'rotated') wrap.append(' → ', link(`#/keys/${key.replacedBy}`, `key ${key.replacedBy}`))
  if (status === 'expiring' || (status === 'rotated' && key.expiresAt !== null && Date.parse(key.expiresAt) > Date.now())) {
    wrap.append(', expires ', countdown(key.expiresAt))
  }
  if (status === 'banned') {
    wrap.append(' until ', el('time', { datetime: key.ban.until, text: dateTime(key.ban.until) }), ' (', countdown(key.ban.until, 'ended'), ')')
  }
  return wrap
}

const keyLabel = (key) => key.name === null ? `key ${key.id}` : key.name

/**
 * A key made before checksums (issue 32; `format` in the key view) that still works: the operator
 * should rotate it. A revoked, rotated or expired one cannot be rotated, so it gets no badge.
 */
function legacyBadge (key) {
  if (key.format !== 'legacy' || ['revoked', 'rotated', 'expired'].includes(statusOf(key))) return null
  return el('span', { class: 'badge legacy', 'data-format': 'legacy', text: 'legacy format: rotate it' })
}

/** Why a key was revoked, as key.revoked says (`reason`): an admin's request, or a leak reported. */
const REVOCATION_REASONS = {
  requested: 'requested (by an admin or the command line)',
  leaked: 'leaked (reported through POST /v1/keys/leaked)'
}
const reasonText = (reason) => Object.hasOwn(REVOCATION_REASONS, reason) ? REVOCATION_REASONS[reason] : String(reason)

function prefixNode (key) {
  const wrap = el('span', {}, el('code', { text: key.prefix }))
  const badge = legacyBadge(key)
  if (badge !== null) wrap.append(' ', badge)
  return wrap
}

// ---- views ---------------------------------------------------------------------------------

function show (view) {
  for (const id of views) $(id).hidden = id !== view
  $('nav').hidden = view === 'sign-in'
}

function signOut (message) {
  sessionStorage.removeItem(STORAGE_KEY)
  newKeyShown(null)
  show('sign-in')
  if (location.hash !== '') history.replaceState(null, '', location.pathname)
  if (message !== undefined) warn(message)
  else say('Signed out: the key is forgotten.')
  $('api-key').value = ''
  $('api-key').focus()
}

async function signIn (key) {
  try {
    await api('/v1/admin/keys?limit=1', { key })
  } catch (error) {
    if (error instanceof ApiError && error.status === 403) return 'This key is valid but it is not an admin key: the console needs a key with the admin role.'
    if (error instanceof ApiError && error.status === 401) return `This key is not accepted: ${error.message}`
    return explain(error)
  }
  sessionStorage.setItem(STORAGE_KEY, key)
  return null
}

// Keys table with paging through Link: the stack holds the URLs of the pages before this one.
let pages = []
let current = null
let next = null

function listUrl () {
  const form = new FormData($('filters'))
  const params = new URLSearchParams()
  for (const [name, value] of form) if (value !== '') params.set(name, String(value))
  const query = params.toString()
  return `/v1/admin/keys${query === '' ? '' : `?${query}`}`
}

const keysTurn = turns()
async function loadKeys (url) {
  const isLatest = keysTurn()
  const { data, link: header } = await api(url)
  if (!isLatest()) return
  current = url
  next = nextFromLink(header)
  const body = $('keys-table').tBodies[0]
  body.replaceChildren(...data.map((key) => el('tr', { 'data-key-id': String(key.id) },
    el('th', { scope: 'row' }, link(`#/keys/${key.id}`, keyLabel(key))),
    cell(prefixNode(key)),
    cell(key.role),
    cell(key.plan),
    cell(`${key.limits.perMinute}/min, ${key.limits.perDay}/day`),
    cell(statusNode(key)),
    cell(key.lastUsedAt === null ? 'never' : dateTime(key.lastUsedAt))
  )))
  if (data.length === 0) body.append(el('tr', {}, el('td', { colspan: '7', text: 'No key matches.' })))
  $('prev-page').disabled = pages.length === 0
  $('next-page').disabled = next === null
}

function newKeyShown (created) {
  $('new-key').hidden = created === null
  $('new-key-value').textContent = created === null ? '' : created.key
  if (created !== null) $('copy-key').focus()
}

// A key's page.
let shown = null // { key, etag }
// Each loadKey takes the next view number; an answer for an older one (the operator moved on to
// another key, or the same key was loaded again) draws nothing. Without it, a late answer for the
// previous key's windows, bans, usage or history lands in tables just cleared for this one.
let keyView = 0

async function chainOf (key) {
  const chain = [key]
  const seen = new Set([key.id])
  let back = key.replaces
  while (back !== null && !seen.has(back) && chain.length < 20) {
    const { data } = await api(`/v1/admin/keys/${back}`)
    chain.unshift(data); seen.add(back); back = data.replaces
  }
  let forward = key.replacedBy
  while (forward !== null && !seen.has(forward) && chain.length < 40) {
    const { data } = await api(`/v1/admin/keys/${forward}`)
    chain.push(data); seen.add(forward); forward = data.replacedBy
  }
  return chain
}

async function loadKey (id) {
  const view = ++keyView
  if (shown?.key.id !== id) {
    // Another key: nothing of the previous one stays on screen while this one loads.
    shown = null
    $('key-title').textContent = `Key ${id}`
    for (const node of [$('key-details'), $('chain'), $('usage-chart'), $('usage-mcp'), $('usage-table').tBodies[0], $('windows-table').tBodies[0], $('bans-table').tBodies[0]]) node.replaceChildren()
  }
  const { data: key, etag } = await api(`/v1/admin/keys/${id}`)
  // The chain is fetched before anything is drawn: the details and the chain change together, so
  // a key shown as rotated never sits beside its chain from before the rotation.
  const chain = await chainOf(key)
  if (view !== keyView) return
  shown = { key, etag }
  $('key-title').textContent = `${keyLabel(key)} (key ${key.id})`
  const details = [
    ['Prefix', el('code', { text: key.prefix })],
    ['Format', key.format === 'legacy' ? el('span', {}, 'legacy (no checksum)', ...(legacyBadge(key) === null ? [] : [' ', legacyBadge(key)])) : 'checksummed'],
    ['Role', key.role], ['Plan', key.plan],
    ['Quotas', `${key.limits.perMinute} per minute, ${key.limits.perDay} per day`],
    // A restricted key lists its scopes; null: everything its role allows.
    ['Scopes', key.scopes === null || key.scopes === undefined ? `all its role allows (${key.role})` : key.scopes.join(', ')],
    ['Status', el('span', {}, statusNode(key), el('span', { id: 'revocation-reason' }))],
    ['Created', dateTime(key.createdAt)], ['Expires', key.expiresAt === null ? 'never' : dateTime(key.expiresAt)],
    ['Last used', key.lastUsedAt === null ? 'never' : dateTime(key.lastUsedAt)]
  ]
  $('key-details').replaceChildren(...details.flatMap(([term, value]) => [el('dt', { text: term }), el('dd', {}, value)]))
  $('chain').replaceChildren(...chain.map((k) => el('li', {},
    k.id === key.id ? el('strong', { text: `${keyLabel(k)} (key ${k.id}, ${statusOf(k)})` }) : link(`#/keys/${k.id}`, `${keyLabel(k)} (key ${k.id}, ${statusOf(k)})`))))
  $('plan-plan').value = key.plan
  $('plan-per-minute').value = key.plan === 'enterprise' ? String(key.limits.perMinute) : ''
  $('plan-per-day').value = key.plan === 'enterprise' ? String(key.limits.perDay) : ''
  $('lift-ban').hidden = key.ban === null
  $('revoke').hidden = key.revokedAt !== null
  $('rotate-form').hidden = key.revokedAt !== null || key.replacedBy !== null
  $('confirm-revoke').hidden = true
  await Promise.all([
    loadUsage(key.id, view), loadWindows(key.id, view), loadBans(key.id, view), loadKeyHistory(key, view)
  ])
}

// When the key page's windows change next (the earliest reset), and whose they are: read again then.
let windowsChangeAt = Infinity
let windowsKey = null

async function loadWindows (id, view) {
  const { data } = await api(`/v1/admin/keys/${id}/rate_limit`)
  if (view !== keyView) return
  windowsKey = id
  windowsChangeAt = Math.min(data.windows.minute.reset, data.windows.day.reset) * 1000
  const row = (name, w) => el('tr', {},
    el('th', { scope: 'row', text: name }),
    cell(w.used, { class: 'num' }),
    cell(w.remaining, { class: 'num' }),
    cell(w.limit, { class: 'num' }),
    cell(countdown(new Date(w.reset * 1000).toISOString(), 'now')))
  $('windows-table').tBodies[0].replaceChildren(row('minute', data.windows.minute), row('day', data.windows.day))
}

async function loadBans (id, view) {
  const { data } = await api(`/v1/admin/keys/${id}/bans`)
  if (view !== keyView) return
  const body = $('bans-table').tBodies[0]
  body.replaceChildren(...data.bans.map((b) => el('tr', {},
    cell(dateTime(b.startedAt)),
    cell(dateTime(b.until)),
    cell(b.liftedAt === null ? 'no' : dateTime(b.liftedAt)),
    cell(b.reason))))
  if (data.bans.length === 0) body.append(el('tr', {}, el('td', { colspan: '4', text: 'Never banned.' })))
}

// The usage table also follows the range buttons: only the latest range asked for is drawn.
let usageAsked = 0
async function loadUsage (id, view) {
  const asked = ++usageAsked
  const days = Number(new FormData($('usage-range')).get('days') ?? 30)
  const { data } = await api(`/v1/admin/keys/${id}/usage?days=${days}`)
  if (view !== keyView || asked !== usageAsked) return
  // `other4xx` is counted inside `allowed` (what the windows charged): the bars and the table show
  // allowed - other4xx, so that each request is in exactly one of them, as the partner portal does.
  const rows = data.days.map((d) => ({ ...d, allowed: d.allowed - d.other4xx }))
  $('usage-table').tBodies[0].replaceChildren(...rows.map((d) => el('tr', { 'data-date': d.date },
    el('th', { scope: 'row', text: d.date }),
    cell(d.allowed, { class: 'num' }),
    cell(d.other4xx, { class: 'num' }),
    cell(d.limited, { class: 'num' }),
    cell(d.banned, { class: 'num' }),
    cell(d.mcp, { class: 'num', 'data-mcp': '' }))))
  if (data.days.length === 0) $('usage-table').tBodies[0].append(el('tr', {}, el('td', { colspan: '6', text: 'No traffic in the period.' })))
  // Calls through MCP: of the requests counted above, those an agent made (tool calls, initialize, lists).
  const mcp = data.days.reduce((sum, d) => sum + d.mcp, 0)
  $('usage-mcp').replaceChildren('Calls through MCP in the period (tool calls, initialize and lists; counted in the columns too): ', el('strong', { id: 'usage-mcp-count', text: String(mcp) }))
  $('usage-chart').replaceChildren(chart(rows, days))
}

// ---- the usage chart (shared.js), one stacked bar per UTC day -------------------------------

const USAGE_PARTS = [
  { key: 'allowed', label: 'allowed' }, { key: 'other4xx', label: 'other 4xx' },
  { key: 'limited', label: 'limited' }, { key: 'banned', label: 'banned' }
]
function chart (rows, days) {
  return usageChart(rows, { days, parts: USAGE_PARTS, titleId: 'usage-chart-title' })
}

// ---- the deprecation view ------------------------------------------------------------------

async function loadDeprecations () {
  const { data } = await api('/v1/admin/deprecations')
  $('deprecations-from').textContent = `Calls since ${data.from} (30 UTC days, today included), by key.`
  $('deprecations').replaceChildren(...data.operations.map((op) => {
    const section = el('section', { class: 'operation', 'data-operation': op.operationId })
    const heading = el('h3', {}, el('code', { text: `${op.method} ${op.path}` }))
    section.append(heading)
    const facts = el('p', {}, `Deprecated ${dateTime(op.deprecatedAt)}. `)
    if (op.sunsetAt !== null) {
      facts.append('Sunset ', el('time', { datetime: op.sunsetAt, text: dateTime(op.sunsetAt) }), ' (', countdown(op.sunsetAt), ').')
    }
    if (op.successor !== null) facts.append(' Use ', el('code', { text: `${op.successor.method} ${op.successor.path}` }), ' instead.')
    section.append(facts)
    const table = el('table', {}, el('caption', { text: `Keys that called ${op.method} ${op.path}` }),
      el('thead', {}, el('tr', {}, ...['Key', 'Prefix', 'Calls', 'Per day', 'Last call'].map((h) => el('th', { scope: 'col', text: h })))))
    const body = el('tbody')
    for (const k of op.keys) {
      body.append(el('tr', { 'data-key-id': String(k.keyId) },
        el('th', { scope: 'row' }, link(`#/keys/${k.keyId}`, k.name ?? `key ${k.keyId}`)),
        cell(k.prefix === null ? null : el('code', { text: k.prefix })),
        cell(k.calls, { class: 'num' }),
        cell(k.days.map((d) => `${d.date}: ${d.calls}`).join(', ')),
        cell(dateTime(k.lastCallAt))))
    }
    if (op.keys.length === 0) body.append(el('tr', {}, el('td', { colspan: '5', text: 'No key called it in the period.' })))
    table.append(body)
    section.append(table)
    return section
  }))
  if (data.operations.length === 0) $('deprecations').append(el('p', { text: 'No operation is deprecated.' }))
}

// ---- the webhook views ---------------------------------------------------------------------
// Endpoints from GET /v1/webhooks (an admin sees every key holder's), deliveries from
// GET /v1/webhooks/{id}/deliveries, and why an endpoint is disabled from its `disabledReason`,
// else (an endpoint disabled before reasons were kept) from its latest webhook.disabled event in
// the feed (GET /v1/events), with when. Test and replay answer 202 at once; the page then
// reloads the deliveries until the attempt is made, and says how it went.

const DELIVERY_LIMIT = 100
const FEED_PAGE = 100
/** At most this many pages of webhook.disabled events are read (the feed keeps EVENT_RETENTION_DAYS). */
const FEED_PAGES = 20
const FOLLOW_TRIES = 20
const FOLLOW_INTERVAL_MS = 500

let webhookPages = []
let webhookCurrent = null
let webhookNext = null
let shownWebhook = null // the endpoint on screen
let shownEntries = []
let acting = false

const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms) })
const webhookPath = (id) => `/v1/webhooks/${encodeURIComponent(id)}`

function webhookLabel (webhook) {
  if (webhook.description === undefined || webhook.description.trim() === '') return webhook.id
  const first = webhook.description.trim().split('\n')[0]
  return first.length > 80 ? `${first.slice(0, 79)}…` : first
}

/** The latest webhook.disabled event of each endpoint, by endpoint id: { reason, at }. */
async function disabledReasons () {
  const reasons = new Map()
  let url = `/v1/events?type=webhook.disabled&limit=${FEED_PAGE}`
  for (let page = 0; page < FEED_PAGES && url !== null; page++) {
    const { data, link: header } = await api(url)
    // The feed is oldest first: a later event of the same endpoint replaces an earlier one.
    for (const event of data) {
      if (typeof event.data?.id === 'string') reasons.set(event.data.id, { reason: event.data.reason, at: event.createdAt })
    }
    url = data.length < FEED_PAGE ? null : nextFromLink(header, '/v1/events')
  }
  return reasons
}

/** Attempts and pending deliveries (newest first) grouped by event, latest activity first. */
function byEvent (entries) {
  const events = new Map()
  for (const entry of entries) {
    let delivery = events.get(entry.eventId)
    if (delivery === undefined) {
      delivery = { eventId: entry.eventId, type: entry.type, made: [], pending: null }
      events.set(entry.eventId, delivery)
    }
    if (entry.outcome === 'pending') delivery.pending ??= entry
    else delivery.made.push(entry)
  }
  return [...events.values()]
}

/** "HTTP 503, 40 ms", "connection refused, 12 ms". */
function responseOf (attempt) {
  if (attempt === undefined) return null
  const parts = []
  if (attempt.status !== undefined) parts.push(`HTTP ${attempt.status}`)
  if (attempt.error !== undefined && attempt.error !== `HTTP ${attempt.status}`) parts.push(attempt.error)
  if (attempt.durationMs !== undefined) parts.push(`${attempt.durationMs} ms`)
  return parts.join(', ')
}

function latestAttemptNode (attempt) {
  if (attempt === undefined) return 'no recent attempt'
  return el('span', {},
    el('span', { class: `outcome-${attempt.outcome}`, text: attempt.outcome }), `, ${responseOf(attempt)}, `,
    el('time', { datetime: attempt.at, text: dateTime(attempt.at) }))
}

function webhookStatusNode (webhook, reasons, latest) {
  const wrap = el('span')
  if (webhook.status === 'disabled') {
    const why = reasons.get(webhook.id)
    const told = webhook.disabledReason ?? why?.reason
    const reason = ['failing', 'manual', 'owner_inactive'].includes(told) ? told : 'unknown'
    wrap.append(el('span', { class: 'state-disabled', 'data-status': 'disabled', 'data-reason': reason, text: 'disabled' }))
    if (reason === 'failing') wrap.append(' after 5 days in which every attempt failed')
    else if (reason === 'manual') wrap.append(' by hand')
    else if (reason === 'owner_inactive') wrap.append(': its owner has no live key (revoked or expired)')
    else wrap.append(' (why is no longer known: the event that said so is older than the events kept)')
    if (why !== undefined) wrap.append(', ', el('time', { datetime: why.at, text: dateTime(why.at) }))
    return wrap
  }
  const failing = latest !== undefined && latest.outcome === 'failed'
  wrap.append(el('span', { class: failing ? 'state-failing' : 'state-enabled', 'data-status': 'enabled', 'data-failing': String(failing), text: 'enabled' }))
  if (failing) wrap.append(': the latest attempt failed (5 days of failures disable it)')
  return wrap
}

const webhooksTurn = turns()
async function loadWebhooks (url) {
  const isLatest = webhooksTurn()
  const { data, link: header } = await api(url)
  if (!isLatest()) return
  webhookCurrent = url
  webhookNext = nextFromLink(header, '/v1/webhooks')
  const [reasons, latest] = await Promise.all([
    data.some((w) => w.status === 'disabled') ? disabledReasons() : new Map(),
    // An endpoint deleted meanwhile (404) just shows no attempt.
    Promise.all(data.map(async (w) => {
      try {
        return (await api(`${webhookPath(w.id)}/deliveries?limit=20`)).data.find((d) => d.outcome !== 'pending')
      } catch (error) {
        if (error instanceof ApiError && error.status === 404) return undefined
        throw error
      }
    }))
  ])
  if (!isLatest()) return
  const body = $('webhooks-table').tBodies[0]
  body.replaceChildren(...data.map((webhook, i) => el('tr', { 'data-webhook-id': webhook.id },
    el('th', { scope: 'row' }, link(`#/webhooks/${encodeURIComponent(webhook.id)}`, webhookLabel(webhook))),
    cell(el('code', { text: webhook.url })),
    cell(link(`#/keys/${webhook.ownerKeyId}`, `key ${webhook.ownerKeyId}`)),
    cell(webhook.types.join(', ')),
    cell(webhookStatusNode(webhook, reasons, latest[i])),
    cell(latestAttemptNode(latest[i]))
  )))
  if (data.length === 0) body.append(el('tr', {}, el('td', { colspan: '6', text: 'No webhook endpoint yet.' })))
  $('webhooks-prev').disabled = webhookPages.length === 0
  $('webhooks-next').disabled = webhookNext === null
}

function result (text, ok) {
  const node = $('webhook-result')
  node.textContent = text
  node.className = ok ? 'result ok' : 'result error'
}

/** Shows the endpoint and its deliveries; returns the delivery entries. */
const webhookTurn = turns()
async function loadWebhook (id) {
  const isLatest = webhookTurn()
  if (shownWebhook?.id !== id) {
    // Another endpoint: nothing of the previous one stays on screen while this one loads.
    shownWebhook = null
    shownEntries = []
    $('webhook-title').textContent = `Endpoint ${id}`
    for (const node of [$('webhook-details'), $('deliveries-table').tBodies[0]]) node.replaceChildren()
    result('', true)
    $('toggle-webhook').hidden = true
  }
  const [{ data: webhook }, { data: entries }] = await Promise.all([
    api(webhookPath(id)),
    api(`${webhookPath(id)}/deliveries?limit=${DELIVERY_LIMIT}`)
  ])
  const reasons = webhook.status === 'disabled' ? await disabledReasons() : new Map()
  // Not the endpoint on screen any more: its answer must not become shownWebhook, which the
  // buttons (send a test, replay, disable) act on.
  if (!isLatest()) return entries
  shownWebhook = webhook
  shownEntries = entries
  $('webhook-title').textContent = webhook.description === undefined ? `Endpoint ${webhook.id}` : `${webhookLabel(webhook)} (${webhook.id})`
  const details = [
    ['Id', el('code', { text: webhook.id })], ['URL', el('code', { text: webhook.url })],
    ['Owner', link(`#/keys/${webhook.ownerKeyId}`, `key ${webhook.ownerKeyId}`)], ['Types', webhook.types.join(', ')],
    ['Description', webhook.description ?? '—'],
    ['Status', webhookStatusNode(webhook, reasons, entries.find((d) => d.outcome !== 'pending'))],
    ['Created', dateTime(webhook.createdAt)], ['Changed', dateTime(webhook.updatedAt)]
  ]
  $('webhook-details').replaceChildren(...details.flatMap(([term, value]) => [el('dt', { text: term }), el('dd', {}, value)]))
  $('toggle-webhook').textContent = webhook.status === 'enabled' ? 'Disable' : 'Enable again'
  $('toggle-webhook').hidden = false
  renderDeliveries(byEvent(entries), webhook.status === 'disabled')
  return entries
}

function renderDeliveries (deliveries, paused) {
  const body = $('deliveries-table').tBodies[0]
  body.replaceChildren(...deliveries.map((d) => {
    const last = d.made[0]
    const state = d.pending !== null ? 'pending' : last.outcome
    let stateText = { succeeded: 'delivered', failed: 'failed (no attempt left)' }[state]
    // A pending replay of an event already delivered is queued again, not retrying: only a retry
    // follows a failure (a success settles the retries of its event).
    if (state === 'pending') {
      stateText = paused ? 'waiting: the endpoint is disabled' : d.made.length === 0 ? 'queued' : d.pending.kind === 'retry' ? 'retrying' : 'queued again (replay)'
    }
    const next = d.pending === null
      ? null
      : paused
        ? 'when enabled again'
        : el('span', {}, el('time', { datetime: d.pending.at, text: dateTime(d.pending.at) }), ' (', countdown(d.pending.at), ')')
    const action = d.type === 'webhook.test'
      ? cell('not replayed: send another test')
      : cell(el('button', { type: 'button', 'data-replay': d.eventId, 'aria-label': `Replay ${d.eventId}`, text: 'Replay' }))
    return el('tr', { 'data-event-id': d.eventId, 'data-state': state },
      el('th', { scope: 'row' }, el('code', { text: d.eventId })),
      cell(d.type),
      cell(el('span', { class: `outcome-${state}`, text: stateText })),
      cell(d.made.length, { class: 'num' }),
      cell(responseOf(last)),
      cell(last === undefined ? null : dateTime(last.at)),
      cell(next),
      action)
  }))
  if (deliveries.length === 0) body.append(el('tr', {}, el('td', { colspan: '8', text: 'No delivery yet: send a test event.' })))
}

/**
 * Shows the queued delivery, then reads the deliveries (one request each time, so that a free
 * plan's admin key is not used up) until the event has more than `before` attempts, about 10 s
 * at most, and says how the latest went. Stops when the operator leaves the endpoint's page.
 */
async function follow (id, eventId, before, what) {
  await loadWebhook(id)
  for (let i = 0; i < FOLLOW_TRIES; i++) {
    await sleep(FOLLOW_INTERVAL_MS)
    if (shownWebhook?.id !== id || location.hash !== `#/webhooks/${id}`) return
    const { data: entries } = await api(`${webhookPath(id)}/deliveries?limit=${DELIVERY_LIMIT}`)
    const delivery = byEvent(entries).find((d) => d.eventId === eventId)
    if (delivery !== undefined && delivery.made.length > before) {
      await loadWebhook(id)
      const last = delivery.made[0]
      if (last.outcome === 'succeeded') result(`${what} was delivered: ${responseOf(last)}.`, true)
      else result(`${what} failed: ${responseOf(last)}.${delivery.pending === null ? '' : ` Next attempt ${dateTime(delivery.pending.at)}.`}`, false)
      return
    }
  }
  await loadWebhook(id)
  result(`${what} is queued, with no attempt yet; refresh the deliveries to see it.`, true)
}

async function webhookAction (work) {
  if (acting || shownWebhook === null) return
  acting = true
  for (const id of ['send-test', 'toggle-webhook']) $(id).disabled = true
  try {
    await work(shownWebhook)
  } catch (error) {
    result(explain(error), false)
  } finally {
    acting = false
    for (const id of ['send-test', 'toggle-webhook']) $(id).disabled = false
  }
}

async function sendTest (webhook) {
  const { data } = await api(`${webhookPath(webhook.id)}/test`, { method: 'POST' })
  if (webhook.status === 'disabled') {
    result(`Test event ${data.eventId} queued: it goes out when the endpoint is enabled again.`, true)
    await loadWebhook(webhook.id)
    return
  }
  result(`Test event ${data.eventId} queued; waiting for its attempt…`, true)
  await follow(webhook.id, data.eventId, 0, `Test event ${data.eventId}`)
}

async function replay (webhook, eventId) {
  const before = byEvent(shownEntries).find((d) => d.eventId === eventId)?.made.length ?? 0
  const { data } = await api(`${webhookPath(webhook.id)}/replay`, { method: 'POST', body: { eventIds: [eventId] } })
  if (data.queued === 0) {
    result(`Nothing was queued: event ${eventId} is no longer kept, or the endpoint no longer receives its type.`, false)
    return
  }
  if (webhook.status === 'disabled') {
    result(`Event ${eventId} queued again: it goes out when the endpoint is enabled again.`, true)
    await loadWebhook(webhook.id)
    return
  }
  result(`Event ${eventId} queued again; waiting for its attempt…`, true)
  await follow(webhook.id, eventId, before, `The replay of ${eventId}`)
}

async function toggleWebhook (webhook) {
  const status = webhook.status === 'enabled' ? 'disabled' : 'enabled'
  await api(webhookPath(webhook.id), { method: 'PATCH', body: { status } })
  result(status === 'enabled'
    ? 'The endpoint is enabled again: its pending deliveries resume.'
    : 'The endpoint is disabled: nothing is sent to it until it is enabled again.', true)
  await loadWebhook(webhook.id)
}

// ---- the audit log: its view and each key's history (GET /v1/admin/audit) -----------------

let auditPages = []
let auditCurrent = null
let auditNext = null

function auditUrl () {
  const params = new URLSearchParams()
  for (const [name, value] of new FormData($('audit-filters'))) if (String(value).trim() !== '') params.set(name, String(value).trim())
  const query = params.toString()
  return `/v1/admin/audit${query === '' ? '' : `?${query}`}`
}

function actorText (actor) {
  if (actor.type === 'key') return `key ${actor.keyId} (${actor.role})`
  if (actor.type === 'cli') return `command line (${actor.user})`
  return actor.type
}

function actorNode (actor) {
  return actor.type === 'key' ? link(`#/keys/${actor.keyId}`, actorText(actor)) : document.createTextNode(actorText(actor))
}

/** Each field as `name: before → after` (values as JSON text, inserted as text). */
function changesNode (changes) {
  const list = el('ul', { class: 'changes' })
  for (const [field, change] of Object.entries(changes)) {
    const before = Object.hasOwn(change, 'before') ? `${JSON.stringify(change.before)} → ` : ''
    list.append(el('li', {}, el('code', { text: field }), document.createTextNode(`: ${before}${JSON.stringify(change.after ?? null)}`)))
  }
  return list
}

function targetNode (target) {
  const text = `${target.type} ${target.id}`
  return target.type === 'key' ? link(`#/keys/${target.id}`, text) : document.createTextNode(text)
}

const auditTurn = turns()
async function loadAudit (url) {
  const isLatest = auditTurn()
  const [{ data, link: header }, { data: head }] = await Promise.all([api(url), api('/v1/admin/audit/head')])
  if (!isLatest()) return
  auditCurrent = url
  auditNext = nextFromLink(header, '/v1/admin/audit')
  $('audit-head').textContent = `${head.count} entries; last hash ${head.hash === '' ? '(none)' : head.hash}`
  const body = $('audit-table').tBodies[0]
  body.replaceChildren(...data.map((entry) => el('tr', { 'data-entry': String(entry.id) },
    cell(entry.id, { class: 'num' }),
    cell(dateTime(entry.at)),
    cell(el('code', { text: entry.action })),
    cell(targetNode(entry.target)),
    cell(actorNode(entry.actor)),
    cell(entry.requestId === null ? '' : `${entry.requestId} from ${entry.address ?? '?'}`),
    cell(changesNode(entry.changes)))))
  if (data.length === 0) body.append(el('tr', {}, el('td', { colspan: '7', text: 'No entry matches.' })))
  $('audit-prev').disabled = auditPages.length === 0
  $('audit-next').disabled = auditNext === null
}

/**
 * Why a revoked key was revoked: the `reason` of its key.revoke entry when the audit log records
 * it, else of its key.revoked event in the feed (GET /v1/events; an event without one was written
 * before reasons were kept, when every revocation was requested). Null when neither is left: the
 * feed keeps EVENT_RETENTION_DAYS, and a partner revoked with its rotation chain before each key
 * got an event of its own has none.
 */
async function revocationReason (key, entries) {
  const recorded = entries.find((entry) => entry.action === 'key.revoke')?.changes.reason?.after
  if (typeof recorded === 'string') return recorded
  let url = `/v1/events?type=key.revoked&limit=${FEED_PAGE}`
  for (let page = 0; page < FEED_PAGES && url !== null; page++) {
    const { data, link: header } = await api(url)
    const event = data.find((e) => e.data?.id === key.id)
    if (event !== undefined) return typeof event.data.reason === 'string' ? event.data.reason : 'requested'
    url = data.length < FEED_PAGE ? null : nextFromLink(header, '/v1/events')
  }
  return null
}

async function loadKeyHistory (key, view) {
  const { data } = await api(`/v1/admin/audit?targetType=key&targetId=${key.id}&limit=50`)
  const reason = key.revokedAt === null ? null : await revocationReason(key, data)
  if (view !== keyView) return
  if (reason !== null) $('revocation-reason').replaceChildren(', ', el('span', { 'data-reason': reason, text: reasonText(reason) }))
  const body = $('key-history-table').tBodies[0]
  body.replaceChildren(...data.map((entry) => {
    const action = el('span', {}, el('code', { text: entry.action }))
    if (entry.action === 'key.revoke' && reason !== null) action.append(': ', el('span', { 'data-reason': reason, text: reasonText(reason) }))
    return el('tr', { 'data-entry': String(entry.id) },
      cell(dateTime(entry.at)), cell(action), cell(actorNode(entry.actor)), cell(changesNode(entry.changes)))
  }))
  if (data.length === 0) body.append(el('tr', {}, el('td', { colspan: '4', text: 'No recorded change.' })))
}

$('audit-filters').addEventListener('submit', async (event) => {
  event.preventDefault()
  auditPages = []
  try { await loadAudit(auditUrl()) } catch (error) { warn(explain(error)) }
})
$('audit-next').addEventListener('click', async () => {
  if (auditNext === null) return
  auditPages.push(auditCurrent)
  try { await loadAudit(auditNext) } catch (error) { auditPages.pop(); warn(explain(error)) }
})
$('audit-prev').addEventListener('click', async () => {
  const previous = auditPages.pop()
  if (previous === undefined) return
  try { await loadAudit(previous) } catch (error) { warn(explain(error)) }
})

// ---- routing (the hash names the view; it never holds the key) -------------------------------

async function route () {
  if (apiKey() === null) { show('sign-in'); return }
  const hash = location.hash
  const keyMatch = /^#\/keys\/(\d+)$/.exec(hash)
  const webhookMatch = /^#\/webhooks\/(wh_[0-9a-f]{24})$/.exec(hash)
  try {
    if (keyMatch !== null) {
      show('key-view')
      await loadKey(Number(keyMatch[1]))
    } else if (hash === '#/deprecations') {
      show('deprecations-view')
      await loadDeprecations()
    } else if (webhookMatch !== null) {
      show('webhook-view')
      await loadWebhook(webhookMatch[1])
    } else if (hash === '#/audit') {
      show('audit-view')
      auditPages = []
      await loadAudit(auditUrl())
    } else if (hash === '#/webhooks') {
      show('webhooks-view')
      webhookPages = []
      await loadWebhooks('/v1/webhooks')
    } else {
      show('keys-view')
      pages = []
      await loadKeys(listUrl())
    }
  } catch (error) {
    if (apiKey() !== null) warn(explain(error))
  }
}

// ---- events --------------------------------------------------------------------------------

$('sign-in-form').addEventListener('submit', async (event) => {
  event.preventDefault()
  const key = $('api-key').value.trim()
  if (key === '') { $('sign-in-error').textContent = 'Type an admin API key.'; return }
  const refusal = await signIn(key)
  $('api-key').value = ''
  if (refusal !== null) { $('sign-in-error').textContent = refusal; $('api-key').focus(); return }
  $('sign-in-error').textContent = ''
  say('Signed in.')
  if (location.hash === '') location.hash = '#/keys'
  else await route()
  $('main').focus()
})

$('sign-out').addEventListener('click', () => { signOut() })

$('filters').addEventListener('submit', async (event) => {
  event.preventDefault()
  pages = []
  try { await loadKeys(listUrl()) } catch (error) { warn(explain(error)) }
})
$('next-page').addEventListener('click', async () => {
  if (next === null) return
  pages.push(current)
  try { await loadKeys(next) } catch (error) { pages.pop(); warn(explain(error)) }
})
$('prev-page').addEventListener('click', async () => {
  const previous = pages.pop()
  if (previous === undefined) return
  try { await loadKeys(previous) } catch (error) { warn(explain(error)) }
})

function quotasFrom (form) {
  const data = new FormData(form)
  const body = { plan: String(data.get('plan')) }
  if (body.plan === 'enterprise') {
    body.perMinute = Number(data.get('perMinute'))
    body.perDay = Number(data.get('perDay'))
  }
  return body
}

$('create-form').addEventListener('submit', async (event) => {
  event.preventDefault()
  const data = new FormData(event.target)
  const body = { role: String(data.get('role')), ...quotasFrom(event.target) }
  const name = String(data.get('name')).trim()
  if (name !== '') body.name = name
  // None checked: no `scopes`, so the key may do everything its role allows (the API's default).
  const scopes = data.getAll('scopes').map(String)
  if (scopes.length > 0) body.scopes = scopes
  $('create-error').textContent = ''
  try {
    const { data: created } = await api('/v1/admin/keys', { method: 'POST', body })
    newKeyShown(created)
    say(`Key ${created.id} created. Copy it now: it is shown once.`)
    event.target.reset()
    await loadKeys(current ?? listUrl())
  } catch (error) {
    // A refusal (a scope outside the role: 400 validation_failed) is said beside the form, as text.
    if (error instanceof ApiError && error.status === 400) $('create-error').textContent = explain(error)
    else warn(explain(error))
  }
})

$('copy-key').addEventListener('click', async () => {
  try {
    await navigator.clipboard.writeText($('new-key-value').textContent)
    say('The key is on the clipboard.')
  } catch {
    const range = document.createRange()
    range.selectNodeContents($('new-key-value'))
    getSelection().removeAllRanges()
    getSelection().addRange(range)
    say('The key is selected: copy it with Ctrl+C (the browser refused the clipboard).')
  }
})
$('dismiss-key').addEventListener('click', () => { newKeyShown(null); say('The key is no longer shown.') })

$('usage-range').addEventListener('change', async () => {
  if (shown === null) return
  try { await loadUsage(shown.key.id, keyView) } catch (error) { warn(explain(error)) }
})

async function act (work, done) {
  const id = shown.key.id
  try {
    const message = await work()
    say(message ?? done)
  } catch (error) {
    warn(explain(error))
  }
  try { await loadKey(id) } catch (error) { warn(explain(error)) }
}

$('plan-form').addEventListener('submit', (event) => {
  event.preventDefault()
  void act(async () => { await api(`/v1/admin/keys/${shown.key.id}`, { method: 'PATCH', body: quotasFrom(event.target), ifMatch: shown.etag }) }, 'Plan and quotas saved.')
})

$('rotate-form').addEventListener('submit', (event) => {
  event.preventDefault()
  const hours = Number(new FormData(event.target).get('grace'))
  void act(async () => {
    const { data: created } = await api(`/v1/admin/keys/${shown.key.id}/rotate`, {
      method: 'POST',
      body: { gracePeriodSeconds: Math.round(hours * 3600) }
    })
    newKeyShown(created)
    return `Key ${shown.key.id} rotated: key ${created.id} replaces it. Copy the new key now: it is shown once.`
  }, '')
})

$('lift-ban').addEventListener('click', () => {
  void act(async () => { await api(`/v1/admin/keys/${shown.key.id}/ban`, { method: 'DELETE' }) }, 'The ban is lifted.')
})

$('revoke').addEventListener('click', () => {
  const key = shown.key
  $('confirm-revoke-text').textContent = `Revoke ${keyLabel(key)} (${key.prefix}…, key ${key.id})? Every request made with it will be refused from now on, and this cannot be undone.`
  $('confirm-revoke-yes').textContent = `Revoke ${keyLabel(key)}`
  $('confirm-revoke').hidden = false
  $('confirm-revoke-no').focus()
})
$('confirm-revoke-no').addEventListener('click', () => { $('confirm-revoke').hidden = true; $('revoke').focus() })
$('confirm-revoke-yes').addEventListener('click', () => {
  void act(async () => { await api(`/v1/admin/keys/${shown.key.id}`, { method: 'DELETE', ifMatch: shown.etag }) }, 'The key is revoked.')
})

$('webhooks-next').addEventListener('click', async () => {
  if (webhookNext === null) return
  webhookPages.push(webhookCurrent)
  try { await loadWebhooks(webhookNext) } catch (error) { webhookPages.pop(); warn(explain(error)) }
})
$('webhooks-prev').addEventListener('click', async () => {
  const previous = webhookPages.pop()
  if (previous === undefined) return
  try { await loadWebhooks(previous) } catch (error) { warn(explain(error)) }
})
$('send-test').addEventListener('click', () => { void webhookAction(sendTest) })
$('toggle-webhook').addEventListener('click', () => { void webhookAction(toggleWebhook) })
$('refresh-deliveries').addEventListener('click', () => {
  void webhookAction(async (webhook) => {
    await loadWebhook(webhook.id)
    result('The deliveries are up to date.', true)
  })
})
$('deliveries-table').addEventListener('click', (event) => {
  const button = event.target instanceof Element ? event.target.closest('button[data-replay]') : null
  if (button === null) return
  const eventId = button.getAttribute('data-replay')
  void webhookAction((webhook) => replay(webhook, eventId))
})

// A window resets: the key page reads its windows again (at most every 5 s) while it is shown,
// as the partner portal's Now page does, so that "used" and "left" never sit beside a passed reset.
let windowsReadAt = 0
setInterval(() => {
  if (apiKey() === null || $('key-view').hidden || windowsKey !== shown?.key.id) return
  if (Date.now() < windowsChangeAt + 1000 || Date.now() - windowsReadAt < 5000) return
  windowsReadAt = Date.now()
  loadWindows(windowsKey, keyView).catch((error) => { if (apiKey() !== null) warn(explain(error)) })
}, 1000)

window.addEventListener('hashchange', () => { newKeyShown(null); for (const id of ['status', 'alert', 'webhook-result']) $(id).textContent = ''; void route() })
// A fresh tab, or a reload: sign in again unless this tab already holds a key.
void route()
