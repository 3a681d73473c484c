/* global document, window, Element, setTimeout, fetch, location, history, FormData, URLSearchParams */
// The partner portal's pages (issue 50, docs/product.md "Partner portal"). Plain DOM, one module,
// no framework, with the helpers /console shares (shared.js, loaded first).
// Rules kept here:
// - The key never reaches the browser: the page holds a session (an HttpOnly cookie it cannot
//   read) and the CSRF token the session answer carries, in memory only. The one-time link rides
//   in the fragment, is exchanged once (POST /portal/session) and removed from the address bar.
// - Everything goes through /portal/api/v1/<path>, which is /v1/<path> acted as the session's key;
//   every change carries X-CSRF-Token.
// - Every value from the API, and above all what a webhook receiver answered, is inserted with
//   textContent (or an SVG text node), never as HTML; long bodies go in a scrolling <pre>.
const { el, link, cell, timeNode, countdown, nextFromLink, usageChart, turns } = globalThis.PetstoreUI

const $ = (id) => document.getElementById(id)
const VIEWS = ['gate-view', 'now-view', 'usage-view', 'requests-view', 'webhooks-view', 'webhook-view', 'events-view', 'key-view']
const API = '/portal/api/v1'

let session = null // { keyId, role, name, expiresAt, csrfToken }

// ---- the session ---------------------------------------------------------------------------

class ApiError extends Error {
  constructor (status, body) {
    const error = body?.error ?? body
    super(error?.message ?? `HTTP ${status}`)
    this.status = status
    this.code = error?.code ?? null
  }
}

async function request (url, { method = 'GET', body } = {}) {
  const headers = { accept: 'application/json' }
  if (body !== undefined) headers['content-type'] = 'application/json'
  if (method !== 'GET' && method !== 'HEAD' && session !== null) headers['x-csrf-token'] = session.csrfToken
  const response = await fetch(url, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'same-origin',
    cache: 'no-store',
    referrerPolicy: 'no-referrer'
  })
  const text = response.status === 204 ? '' : await response.text()
  let data
  try { data = text === '' ? null : JSON.parse(text) } catch { data = { message: text.slice(0, 200) } }
  if (!response.ok) throw new ApiError(response.status, data)
  return { data, link: response.headers.get('link') }
}

/** /v1/<path> as the session's key. A session that ended shows why, wherever it happens. */
async function api (path, options) {
  try {
    return await request(API + path, options)
  } catch (error) {
    if (error instanceof ApiError && error.code === 'portal_session_ended') ended(error.message)
    throw error
  }
}

const SESSION_ENDED = 'Your session ended'

function gate (title, text, help = true) {
  session = null
  show('gate-view')
  $('who').textContent = ''
  $('gate-title').textContent = title
  $('gate-text').textContent = text
  $('gate-help').hidden = !help
  $('gate-title').focus()
}

function ended (message) {
  if ($('gate-view').hidden === false && $('gate-title').textContent === SESSION_ENDED) return
  gate(SESSION_ENDED, `${message} Nothing more can be done from this page; open a new link to come back.`)
  say('')
}

function explain (error) {
  if (error instanceof ApiError) {
    if (error.status === 429) return `Your key is being limited: ${error.message}`
    return `${error.message} (${error.code ?? error.status})`
  }
  return `The API could not be reached: ${error.message}`
}

function say (text) { $('status').textContent = text; $('alert').textContent = '' }
function warn (text) { $('alert').textContent = text; $('status').textContent = '' }

function show (view) {
  for (const id of VIEWS) $(id).hidden = id !== view
  $('nav').hidden = view === 'gate-view'
  const hash = location.hash.startsWith('#/webhooks/') ? '#/webhooks' : location.hash
  for (const a of $('nav').querySelectorAll('a')) {
    if (a.getAttribute('href') === hash) a.setAttribute('aria-current', 'page')
    else a.removeAttribute('aria-current')
  }
}

function signedIn (data) {
  session = data
  $('who').textContent = `· ${data.name ?? `key ${data.keyId}`}`
}

/** The link in the fragment (`#link=<token>`) is exchanged once, and removed from the address bar at once. */
async function open () {
  const match = /^#link=([^&]*)/.exec(location.hash)
  if (match !== null) {
    history.replaceState(null, '', `${location.pathname}#/now`)
    try {
      const { data } = await request('/portal/session', { method: 'POST', body: { link: decodeURIComponent(match[1]) } })
      signedIn(data)
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) gate('This link cannot open the dashboard', error.message)
      else gate('The dashboard could not open', explain(error))
      return
    }
  } else {
    try {
      const { data } = await request('/portal/session')
      signedIn(data)
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) gate('Open your dashboard with a link', 'This browser has no session: a dashboard link opens one.')
      else gate('The dashboard could not open', explain(error))
      return
    }
  }
  if (location.hash === '' || location.hash === '#') history.replaceState(null, '', `${location.pathname}#/now`)
  await route()
}

async function signOut () {
  try {
    await request('/portal/session', { method: 'DELETE' })
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 401)) { warn(explain(error)); return }
  }
  history.replaceState(null, '', location.pathname)
  gate('You are signed out', 'The session is over in this browser. Open a new link to come back.')
  say('Signed out.')
}

// ---- Now: the windows, the ban, the key's expiry and rotation chain --------------------------

/** When what Now shows changes by itself: the first window reset, or the ban's end. */
let nowChangesAt = Infinity

function keyStatus (key) {
  const now = Date.now()
  if (key.revokedAt !== null) return 'revoked'
  if (key.expiresAt !== null && now >= Date.parse(key.expiresAt)) return 'expired'
  if (key.replacedBy !== null) return 'rotated'
  if (key.ban !== null && Date.parse(key.ban.until) > now) return 'banned'
  return 'active'
}

function expiryNode (key) {
  if (key.expiresAt === null) return document.createTextNode('never')
  return el('span', {}, timeNode(key.expiresAt), ' (', countdown(key.expiresAt), ')')
}

async function loadNow () {
  const [{ data: limits }, { data: key }] = await Promise.all([api('/rate_limit'), api('/keys/me')])
  const row = (name, w) => {
    const at = new Date(w.reset * 1000).toISOString()
    return el('tr', { 'data-window': name },
      el('th', { scope: 'row', text: name }),
      cell(w.remaining, { class: 'num', 'data-remaining': '' }),
      cell(w.limit, { class: 'num' }),
      cell(el('span', {}, countdown(at, 'now'), ' (', timeNode(at), ')')))
  }
  $('windows-table').tBodies[0].replaceChildren(row('minute', limits.windows.minute), row('day', limits.windows.day))
  const ban = limits.ban ?? key.ban
  // Read again once a window resets or the ban ends (the ban's box then goes).
  const { minute, day } = limits.windows
  nowChangesAt = Math.min(minute.reset * 1000, day.reset * 1000, ban === null ? Infinity : Date.parse(ban.until))
  $('ban').hidden = ban === null
  if (ban !== null) {
    $('ban').replaceChildren(el('h3', { text: 'Your key is banned' }),
      el('p', {}, 'Every request is refused with 429 api_key_banned until ', timeNode(ban.until), ' (', countdown(ban.until, 'ended'), '). Why: ',
        el('span', { 'data-ban-reason': '', text: ban.reason }), '.'))
  }
  const status = keyStatus(key)
  $('now-key').replaceChildren(...details([
    ['Name', key.name ?? `key ${key.id}`], ['Prefix', el('code', { text: key.prefix })],
    ['Status', el('span', { class: `state-${status}`, 'data-status': status, text: status })],
    ['Plan', `${key.plan}: ${key.limits.perMinute} per minute, ${key.limits.perDay} per day`],
    ['Expires', expiryNode(key)]
  ]))
  $('chain').replaceChildren(...chainItems(key))
}

function chainItems (key) {
  const items = []
  if (key.replaces !== null) items.push(el('li', { text: `key ${key.replaces}, which this key replaced` }))
  items.push(el('li', {}, el('strong', { text: `key ${key.id}: this key (${keyStatus(key)})` })))
  if (key.replacedBy !== null) {
    const li = el('li', { 'data-successor': String(key.replacedBy) }, `key ${key.replacedBy}, its successor`)
    if (key.expiresAt !== null) li.append('; this key stops ', timeNode(key.expiresAt), ' (', countdown(key.expiresAt), ')')
    items.push(li)
  }
  return items
}

function details (pairs) {
  return pairs.flatMap(([term, value]) => [el('dt', { text: term }), el('dd', {}, value)])
}

// ---- Usage: per UTC day by outcome, and the deprecated operations called ---------------------

const USAGE_PARTS = [
  { key: 'allowed', label: 'allowed' }, { key: 'other4xx', label: 'other 4xx' },
  { key: 'limited', label: 'limited' }, { key: 'banned', label: 'banned' }
]

const usageTurn = turns()
async function loadUsage () {
  const current = usageTurn()
  const days = Number(new FormData($('usage-range')).get('days') ?? 30)
  const [{ data }, { data: limits }] = await Promise.all([api(`/keys/me/usage?days=${days}`), api('/rate_limit')])
  if (!current()) return
  // "Today" is the server's UTC day: the day window resets at its end.
  const lastDay = new Date(limits.windows.day.reset * 1000 - 1).toISOString().slice(0, 10)
  // "Other 4xx" (refused for another reason than a window or a ban) is shown when the answer counts
  // it (`other4xx`); a server that does not is not shown zeros it never counted.
  const other = data.days.some((d) => d.other4xx !== undefined)
  for (const node of document.querySelectorAll('[data-other4xx]')) node.hidden = !other
  // `other4xx` is counted inside `allowed` (what the windows charged): the bars and the table show
  // allowed - other4xx, so that each request is in exactly one of them.
  const rows = data.days.map((d) => ({ ...d, allowed: d.allowed - (d.other4xx ?? 0), other4xx: d.other4xx ?? 0 }))
  const parts = other ? USAGE_PARTS : USAGE_PARTS.filter((p) => p.key !== 'other4xx')
  $('usage-chart').replaceChildren(usageChart(rows, { days, parts, titleId: 'usage-chart-title', lastDay }))
  const body = $('usage-table').tBodies[0]
  body.replaceChildren(...rows.map((d) => el('tr', { 'data-date': d.date },
    el('th', { scope: 'row', text: d.date }),
    cell(d.allowed, { class: 'num' }), ...(other ? [cell(d.other4xx, { class: 'num' })] : []),
    cell(d.limited, { class: 'num' }), cell(d.banned, { class: 'num' }))))
  if (rows.length === 0) body.append(el('tr', {}, el('td', { colspan: other ? '5' : '4', text: 'No traffic in the period.' })))
  renderDeprecated(data.deprecated)
}

function renderDeprecated (operations) {
  const box = $('deprecated')
  if (operations === undefined) {
    box.replaceChildren(el('p', { text: 'This server does not list a key\'s calls of deprecated operations yet. Each such call answers with Deprecation and Sunset headers; the Requests page lists your calls by operation.' }))
    return
  }
  if (operations.length === 0) {
    box.replaceChildren(el('p', { text: 'None in the period: nothing you call is deprecated.' }))
    return
  }
  box.replaceChildren(el('ul', {}, ...operations.map((op) => {
    const li = el('li', { 'data-operation': op.operationId ?? '' },
      el('code', { text: `${op.method} ${op.path}` }), `: ${op.calls} calls`)
    if (op.lastCallAt !== undefined && op.lastCallAt !== null) li.append(', the last ', timeNode(op.lastCallAt))
    li.append('.')
    if (op.successor !== null && op.successor !== undefined) {
      li.append(' Use ', el('code', { text: `${op.successor.method} ${op.successor.path}` }), ' instead.')
    }
    if (op.sunsetAt !== null && op.sunsetAt !== undefined) {
      li.append(' It stops answering ', timeNode(op.sunsetAt), ' (', countdown(op.sunsetAt), ').')
    }
    return li
  })))
}

// ---- Requests: the key's own log (GET /v1/keys/me/requests) ------------------------------------

let requestPages = []
let requestCurrent = null
let requestNext = null

function requestsUrl (form) {
  const params = new URLSearchParams()
  for (const [name, value] of new FormData(form)) if (String(value).trim() !== '') params.set(name, String(value).trim())
  const query = params.toString()
  return `/keys/me/requests${query === '' ? '' : `?${query}`}`
}

/** Which rule refused a request, in words. */
function refusalText (refusal) {
  if (refusal === null || refusal === undefined) return null
  const at = (iso) => iso === undefined || iso === null ? '' : new Date(Date.parse(iso)).toISOString().replace('.000Z', 'Z')
  switch (refusal.rule) {
    case 'minute_window':
      return `The minute window: its ${refusal.limit ?? ''} requests were used up; it reset at ${at(refusal.resetAt)}.`
    case 'day_window':
      return `The day window: its ${refusal.limit ?? ''} requests were used up; it reset at ${at(refusal.resetAt)} (UTC midnight).`
    case 'ban':
      return `A ban until ${at(refusal.until)}, for ${refusal.reason ?? 'a reason not recorded'}.`
    case 'scope':
      return `A scope: the operation needs ${refusal.needed ?? 'a scope'}, which your key does not hold.`
    case 'role':
      return `The role: the operation needs the ${refusal.needed ?? 'another'} role.`
    case 'key':
      return `The key itself: ${refusal.message ?? 'it was not accepted'}.`
    case 'portal':
      return `This portal's session: ${refusal.message ?? 'the change was not accepted'}.`
    default:
      return refusal.message ?? String(refusal.rule)
  }
}

const requestsTurn = turns()
async function loadRequests (url) {
  const current = requestsTurn()
  const { data, link: header } = await api(url)
  if (!current()) return
  requestCurrent = url
  requestNext = nextFromLink(header, `${API}/keys/me/requests`)
  if (requestNext !== null && requestNext.startsWith(API)) requestNext = requestNext.slice(API.length)
  else if (requestNext !== null && requestNext.startsWith('/v1/')) requestNext = requestNext.slice(3)
  const items = Array.isArray(data) ? data : data.items ?? []
  const body = $('requests-table').tBodies[0]
  body.replaceChildren(...items.map((r) => {
    const why = refusalText(r.refusal)
    return el('tr', { 'data-request-id': r.requestId, 'data-status': String(r.status) },
      cell(timeNode(r.at)),
      cell(el('span', {}, el('code', { text: `${r.method} ${r.route}${r.query == null ? '' : `?${r.query}`}` }),
        r.operationId == null ? '' : ` (${r.operationId})`)),
      cell(r.status, { class: 'num' }),
      cell(r.code === null ? null : el('code', { text: r.code })),
      cell(el('code', { text: r.requestId })),
      cell(`${r.latencyMs} ms`, { class: 'num' }),
      cell(why === null ? null : el('span', { 'data-rule': r.refusal.rule, text: why })))
  }))
  if (items.length === 0) body.append(el('tr', {}, el('td', { colspan: '7', text: 'No request matches.' })))
  $('requests-prev').disabled = requestPages.length === 0
  $('requests-next').disabled = requestNext === null
}

// ---- Webhooks: endpoints, their attempts with what was sent and answered ----------------------

let webhookPages = []
let webhookCurrent = null
let webhookNext = null
let shownWebhook = null
let acting = false
const wh = (id) => `/webhooks/${encodeURIComponent(id)}`
const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms) })

function webhookLabel (webhook) {
  const text = (webhook.description ?? '').trim().split('\n')[0]
  if (text === '') return webhook.id
  return text.length > 80 ? `${text.slice(0, 79)}…` : text
}

function statusText (webhook) {
  if (webhook.status === 'enabled') return 'enabled'
  const why = { failing: 'after 5 days of failures', manual: 'by hand', owner_inactive: 'its owner has no live key' }[webhook.disabledReason]
  return why === undefined ? 'disabled' : `disabled ${why}`
}

const webhooksTurn = turns()
async function loadWebhooks (url) {
  const current = webhooksTurn()
  const { data, link: header } = await api(url)
  if (!current()) return
  webhookCurrent = url
  const next = nextFromLink(header, `${API}/webhooks`)
  webhookNext = next === null ? null : next.replace(/^\/portal\/api\/v1|^\/v1/, '')
  const body = $('webhooks-table').tBodies[0]
  body.replaceChildren(...data.map((w) => el('tr', { 'data-webhook-id': w.id },
    el('th', { scope: 'row' }, link(`#/webhooks/${encodeURIComponent(w.id)}`, webhookLabel(w))),
    cell(el('code', { text: w.url })),
    cell(w.types.join(', ')),
    cell(el('span', { class: `state-${w.status}`, 'data-status': w.status, text: statusText(w) })))))
  if (data.length === 0) body.append(el('tr', {}, el('td', { colspan: '4', text: 'No endpoint yet: add one below.' })))
  $('webhooks-prev').disabled = webhookPages.length === 0
  $('webhooks-next').disabled = webhookNext === null
}

const typesOf = (text) => String(text).split(',').map((t) => t.trim()).filter((t) => t !== '')

function result (text, ok) {
  $('webhook-result').textContent = text
  $('webhook-result').className = ok ? 'result ok' : 'result error'
}

const KIND = { first: 'first try', retry: 'retry', replay: 'replay' }

/** Headers ([{ name, value }], in order) as `name: value` lines, as text. */
function headersNode (headers) {
  const list = el('dl', { class: 'headers' })
  for (const { name, value } of headers ?? []) list.append(el('dt', { text: name }), el('dd', { text: value }))
  if (list.childElementCount === 0) list.append(el('dt', { text: '(none)' }), el('dd', { text: '' }))
  return list
}

/** A body in a scrolling <pre>, reachable with the keyboard, as text whatever it holds. */
function bodyNode (text, label) {
  return el('pre', { class: 'body', tabindex: '0', 'aria-label': label, text: text === '' ? '(empty)' : text })
}

/** What we sent and what the endpoint answered, for one attempt. */
function attemptPanel (attempt) {
  const panel = el('div', { class: 'attempt' })
  const sent = attempt.request
  if (sent === undefined || sent === null) {
    panel.append(el('p', { text: 'What was sent is no longer kept for this attempt.' }))
  } else {
    panel.append(el('h4', { text: 'What we sent' }),
      el('p', {}, 'POST ', el('code', { text: sent.url ?? '' })),
      headersNode(sent.headers),
      // The exact bytes signed: a receiver checks its signature code against them.
      bodyNode(sent.body ?? '', 'The signed body we sent'))
  }
  const answer = attempt.response
  panel.append(el('h4', { text: 'What your endpoint answered' }))
  if (answer === undefined || answer === null) {
    panel.append(el('p', { 'data-answer': 'none', text: attempt.error === undefined ? 'No answer is kept.' : `No answer: ${attempt.error}.` }))
  } else {
    const took = attempt.durationMs === undefined ? '' : ` after ${attempt.durationMs} ms`
    panel.append(el('p', { 'data-answer-status': String(answer.status), text: `HTTP ${answer.status}${took}` }),
      headersNode(answer.headers),
      bodyNode(answer.body ?? '', 'The body your endpoint answered'))
    if (answer.truncated === true) panel.append(el('p', { text: 'Only the first 4 KiB of the body are kept.' }))
  }
  return panel
}

const webhookTurn = turns()
async function loadWebhook (id) {
  const current = webhookTurn()
  if (shownWebhook?.id !== id) {
    shownWebhook = null
    $('webhook-title').textContent = `Endpoint ${id}`
    for (const node of [$('webhook-details'), $('deliveries-table').tBodies[0]]) node.replaceChildren()
    result('', true)
    $('confirm-delete').hidden = true
  }
  const [{ data: webhook }, { data: entries }] = await Promise.all([api(wh(id)), api(`${wh(id)}/deliveries?limit=100`)])
  // Not the endpoint on screen any more: its answer must not become shownWebhook, which the
  // buttons (delete, disable, replay) act on.
  if (!current()) return entries
  const fresh = shownWebhook?.id !== id
  shownWebhook = webhook
  $('webhook-title').textContent = `${webhookLabel(webhook)}${webhook.description === undefined ? '' : ` (${webhook.id})`}`
  $('webhook-details').replaceChildren(...details([
    ['Id', el('code', { text: webhook.id })], ['URL', el('code', { text: webhook.url })],
    ['Types', webhook.types.join(', ')], ['Description', webhook.description ?? '—'],
    ['Status', el('span', { class: `state-${webhook.status}`, 'data-status': webhook.status, text: statusText(webhook) })],
    ['Created', timeNode(webhook.createdAt)]
  ]))
  $('toggle-webhook').textContent = webhook.status === 'enabled' ? 'Disable' : 'Enable again'
  if (fresh) {
    $('edit-url').value = webhook.url
    $('edit-types').value = webhook.types.join(', ')
    $('edit-description').value = webhook.description ?? ''
  }
  renderAttempts(entries)
  return entries
}

function renderAttempts (entries) {
  const body = $('deliveries-table').tBodies[0]
  const rows = []
  for (const [i, d] of entries.entries()) {
    const pending = d.outcome === 'pending'
    const panelId = `attempt-${i}`
    const error = d.error !== undefined && d.error !== `HTTP ${d.status}` ? `, ${d.error}` : ''
    const answer = pending ? 'due' : d.status !== undefined ? `HTTP ${d.status}${error}` : d.error ?? '—'
    const toggle = pending
      ? cell(null)
      : cell(el('button', { type: 'button', 'data-attempt': d.id ?? '', 'aria-expanded': 'false', 'aria-controls': panelId, text: 'Show' }))
    const replay = d.type === 'webhook.test' || pending
      ? cell(null)
      : cell(el('button', { type: 'button', 'data-replay': d.eventId, 'aria-label': `Replay ${d.eventId}`, text: 'Replay' }))
    rows.push(el('tr', { 'data-event-id': d.eventId, 'data-attempt-id': d.id ?? '', 'data-kind': d.kind, 'data-outcome': d.outcome },
      el('th', { scope: 'row' }, el('code', { text: d.eventId }), el('br'), d.type),
      cell(`${d.attempt}, ${KIND[d.kind] ?? d.kind}`),
      cell(el('span', {}, timeNode(d.at), ...(pending ? [' (', countdown(d.at), ')'] : []))),
      cell(el('span', { class: `outcome-${d.outcome}`, text: d.outcome })),
      cell(answer),
      toggle,
      replay))
    if (!pending) {
      const panelRow = el('tr', { id: panelId, class: 'attempt-row', hidden: '' }, el('td', { colspan: '7' }))
      panelRow.attemptEntry = d
      rows.push(panelRow)
    }
  }
  body.replaceChildren(...rows)
  if (entries.length === 0) body.append(el('tr', {}, el('td', { colspan: '7', text: 'No delivery yet: send a test event from the Events page.' })))
}

async function toggleAttempt (button) {
  const row = $(button.getAttribute('aria-controls'))
  if (row === null) return
  const open = button.getAttribute('aria-expanded') === 'true'
  button.setAttribute('aria-expanded', String(!open))
  button.textContent = open ? 'Show' : 'Hide'
  row.hidden = open
  if (open || row.firstChild.childElementCount > 0) return
  let attempt = row.attemptEntry
  // The bodies may be in the list already; otherwise the attempt's own read has them.
  if (attempt.request === undefined && attempt.response === undefined && attempt.id !== undefined) {
    try {
      attempt = { ...attempt, ...(await api(`${wh(shownWebhook.id)}/attempts/${encodeURIComponent(attempt.id)}`)).data }
    } catch (error) {
      row.firstChild.replaceChildren(el('p', { class: 'error', text: explain(error) }))
      return
    }
  }
  row.firstChild.replaceChildren(attemptPanel(attempt))
}

async function webhookAction (work) {
  if (acting || shownWebhook === null) return
  acting = true
  try {
    await work(shownWebhook)
  } catch (error) {
    result(explain(error), false)
  } finally {
    acting = false
  }
}

/** Reads the deliveries until the event has a new attempt (about 10 s at most), and says how it went. */
async function follow (webhookId, eventId, before, what, say) {
  for (let i = 0; i < 20; i++) {
    await sleep(500)
    const { data } = await api(`${wh(webhookId)}/deliveries?limit=100`)
    const made = data.filter((d) => d.eventId === eventId && d.outcome !== 'pending')
    if (made.length > before) {
      if (shownWebhook?.id === webhookId && location.hash.startsWith('#/webhooks/')) await loadWebhook(webhookId)
      const last = made[0]
      const answer = last.status !== undefined ? `HTTP ${last.status}` : last.error ?? 'no answer'
      say(last.outcome === 'succeeded' ? `${what} was delivered: ${answer}.` : `${what} failed: ${answer}.`, last.outcome === 'succeeded')
      return
    }
  }
  say(`${what} is queued, with no attempt yet; refresh to see it.`, true)
}

// ---- Events: the catalogue, the feed, send a test ---------------------------------------------

let catalogue = null
let feedPages = []
let feedCurrent = null
let feedNext = null

async function loadCatalogue () {
  catalogue ??= (await api('/event_types')).data
  return catalogue
}

async function loadEvents () {
  const [types, { data: webhooks }] = await Promise.all([loadCatalogue(), api('/webhooks?limit=100')])
  const keep = (select, options) => {
    const value = select.value
    select.replaceChildren(...options)
    if ([...select.options].some((o) => o.value === value)) select.value = value
  }
  keep($('test-type'), types.map((t) => el('option', { value: t.type, text: t.type })))
  keep($('feed-type'), [el('option', { value: '', text: 'any' }), ...types.map((t) => el('option', { value: t.type, text: t.type }))])
  keep($('test-webhook'), webhooks.map((w) => el('option', { value: w.id, text: `${webhookLabel(w)} (${w.url})` })))
  $('test-form').querySelector('button').disabled = webhooks.length === 0
  if (webhooks.length === 0) $('test-result').textContent = 'Add an endpoint on the Webhooks page to send it a test.'
  $('catalogue').replaceChildren(...types.map((t) => el('details', { class: 'event-type', 'data-type': t.type },
    el('summary', {}, el('code', { text: t.type })),
    el('p', { text: t.description }),
    el('h4', { text: 'Example of data' }), bodyNode(JSON.stringify(t.example, null, 2), `An example of ${t.type}`),
    el('h4', { text: 'Schema of data' }), bodyNode(JSON.stringify(t.schema, null, 2), `The schema of ${t.type}`))))
  feedPages = []
  await loadFeed(feedUrl())
}

function feedUrl () {
  const type = $('feed-type').value
  return `/events?limit=50${type === '' ? '' : `&type=${encodeURIComponent(type)}`}`
}

const feedTurn = turns()
async function loadFeed (url) {
  const current = feedTurn()
  const { data, link: header } = await api(url)
  if (!current()) return
  feedCurrent = url
  const next = nextFromLink(header, `${API}/events`)
  // The feed's Link is on every page (to poll for later events): a short page is its end for now.
  feedNext = next === null || data.length < 50 ? null : next.replace(/^\/portal\/api\/v1|^\/v1/, '')
  const body = $('feed-table').tBodies[0]
  body.replaceChildren(...data.map((e) => el('tr', { 'data-event-id': e.id },
    cell(timeNode(e.createdAt)), cell(el('code', { text: e.type })), cell(el('code', { text: e.id })),
    cell(el('details', {}, el('summary', { text: 'data' }), bodyNode(JSON.stringify(e.data, null, 2), `The data of ${e.id}`))))))
  if (data.length === 0) body.append(el('tr', {}, el('td', { colspan: '4', text: 'No event.' })))
  $('feed-prev').disabled = feedPages.length === 0
  $('feed-next').disabled = feedNext === null
}

function testResult (text, ok) {
  $('test-result').textContent = text
  $('test-result').className = ok ? 'result ok' : 'result error'
}

// ---- Key: rotate with a grace period ---------------------------------------------------------

async function loadKey () {
  const { data: key } = await api('/keys/me')
  const status = keyStatus(key)
  $('key-details').replaceChildren(...details([
    ['Name', key.name ?? `key ${key.id}`], ['Id', String(key.id)], ['Prefix', el('code', { text: key.prefix })],
    ['Role', key.role], ['Scopes', key.scopes === null ? `all the ${key.role} role allows` : key.scopes.join(', ')],
    ['Status', el('span', { class: `state-${status}`, 'data-status': status, text: status })],
    ['Created', timeNode(key.createdAt)], ['Expires', expiryNode(key)],
    ['Last used', key.lastUsedAt === null ? 'never' : timeNode(key.lastUsedAt)],
    ['Rotation', el('ol', { class: 'chain' }, ...chainItems(key))]
  ]))
  $('rotate-form').hidden = key.replacedBy !== null || key.revokedAt !== null
}

// ---- routing -------------------------------------------------------------------------------

async function route () {
  if (session === null) return
  const hash = location.hash
  const webhookMatch = /^#\/webhooks\/(wh_[0-9a-f]{24})$/.exec(hash)
  const views = {
    '#/usage': ['usage-view', loadUsage],
    '#/requests': ['requests-view', () => { requestPages = []; return loadRequests(requestsUrl($('requests-filters'))) }],
    '#/webhooks': ['webhooks-view', () => { webhookPages = []; return loadWebhooks('/webhooks') }],
    '#/events': ['events-view', loadEvents],
    '#/key': ['key-view', loadKey]
  }
  const [view, load] = webhookMatch !== null
    ? ['webhook-view', () => loadWebhook(webhookMatch[1])]
    : views[hash] ?? ['now-view', loadNow]
  show(view)
  try {
    await load()
  } catch (error) {
    if (session !== null) warn(explain(error))
  }
}

// A window resets or the ban ends: read Now again (at most every 5 s) while it is shown.
let lastReload = 0
globalThis.setInterval(() => {
  if (session === null || $('now-view').hidden || Date.now() < nowChangesAt + 1000 || Date.now() - lastReload < 5000) return
  lastReload = Date.now()
  loadNow().catch((error) => { if (session !== null) warn(explain(error)) })
}, 1000)

// ---- events --------------------------------------------------------------------------------

$('sign-out').addEventListener('click', () => { void signOut() })
$('sign-out-key').addEventListener('click', () => { void signOut() })

$('usage-range').addEventListener('change', () => { loadUsage().catch((error) => { warn(explain(error)) }) })

$('find-form').addEventListener('submit', (event) => {
  event.preventDefault()
  const id = $('find-id').value.trim()
  requestPages = []
  const url = id === '' ? requestsUrl($('requests-filters')) : `/keys/me/requests?requestId=${encodeURIComponent(id)}`
  loadRequests(url).then(() => { say(id === '' ? 'All requests.' : `Requests with Request-Id ${id}.`) }, (error) => { warn(explain(error)) })
})
$('requests-filters').addEventListener('submit', (event) => {
  event.preventDefault()
  requestPages = []
  loadRequests(requestsUrl(event.target)).catch((error) => { warn(explain(error)) })
})
$('requests-next').addEventListener('click', () => {
  if (requestNext === null) return
  requestPages.push(requestCurrent)
  loadRequests(requestNext).catch((error) => { requestPages.pop(); warn(explain(error)) })
})
$('requests-prev').addEventListener('click', () => {
  const previous = requestPages.pop()
  if (previous !== undefined) loadRequests(previous).catch((error) => { warn(explain(error)) })
})

$('webhooks-next').addEventListener('click', () => {
  if (webhookNext === null) return
  webhookPages.push(webhookCurrent)
  loadWebhooks(webhookNext).catch((error) => { webhookPages.pop(); warn(explain(error)) })
})
$('webhooks-prev').addEventListener('click', () => {
  const previous = webhookPages.pop()
  if (previous !== undefined) loadWebhooks(previous).catch((error) => { warn(explain(error)) })
})

$('create-webhook').addEventListener('submit', async (event) => {
  event.preventDefault()
  const data = new FormData(event.target)
  const body = { url: String(data.get('url')).trim(), types: typesOf(data.get('types')) }
  const description = String(data.get('description')).trim()
  if (description !== '') body.description = description
  $('create-error').textContent = ''
  try {
    const { data: created } = await api('/webhooks', { method: 'POST', body })
    event.target.reset()
    showSecret(created.secret)
    say(`Endpoint ${created.id} added. Copy its signing secret now: it is shown once.`)
    await loadWebhooks(webhookCurrent ?? '/webhooks')
  } catch (error) {
    $('create-error').textContent = explain(error)
  }
})

function showSecret (secret) {
  $('secret').hidden = secret === null
  $('secret-value').textContent = secret ?? ''
  if (secret !== null) $('dismiss-secret').focus()
}
$('dismiss-secret').addEventListener('click', () => { showSecret(null); say('The secret is no longer shown.') })

$('toggle-webhook').addEventListener('click', () => {
  void webhookAction(async (webhook) => {
    const status = webhook.status === 'enabled' ? 'disabled' : 'enabled'
    await api(wh(webhook.id), { method: 'PATCH', body: { status } })
    await loadWebhook(webhook.id)
    result(status === 'enabled' ? 'Enabled again: the deliveries waiting resume.' : 'Disabled: nothing is sent to it until you enable it again.', true)
  })
})
$('rotate-secret').addEventListener('click', () => {
  void webhookAction(async (webhook) => {
    const { data } = await api(`${wh(webhook.id)}/rotate_secret`, { method: 'POST' })
    showSecret(data.secret)
    result('The secret is rotated: copy the new one now.', true)
  })
})
$('refresh-deliveries').addEventListener('click', () => {
  void webhookAction(async (webhook) => { await loadWebhook(webhook.id); result('The deliveries are up to date.', true) })
})
$('delete-webhook').addEventListener('click', () => {
  if (shownWebhook === null) return
  $('confirm-delete-text').textContent = `Delete ${webhookLabel(shownWebhook)} (${shownWebhook.url})? Its deliveries go with it, and nothing more is sent to it.`
  $('confirm-delete').hidden = false
  $('confirm-delete-no').focus()
})
$('confirm-delete-no').addEventListener('click', () => { $('confirm-delete').hidden = true; $('delete-webhook').focus() })
$('confirm-delete-yes').addEventListener('click', () => {
  void webhookAction(async (webhook) => {
    await api(wh(webhook.id), { method: 'DELETE' })
    shownWebhook = null
    say(`Endpoint ${webhook.id} deleted.`)
    location.hash = '#/webhooks'
  })
})
$('edit-form').addEventListener('submit', (event) => {
  event.preventDefault()
  void webhookAction(async (webhook) => {
    const body = {}
    const url = $('edit-url').value.trim()
    const types = typesOf($('edit-types').value)
    const description = $('edit-description').value.trim()
    if (url !== webhook.url) body.url = url
    if (types.join(',') !== webhook.types.join(',')) body.types = types
    if (description !== (webhook.description ?? '')) body.description = description
    if (Object.keys(body).length === 0) { result('Nothing changed.', true); return }
    await api(wh(webhook.id), { method: 'PATCH', body })
    shownWebhook = null
    await loadWebhook(webhook.id)
    result('The endpoint is changed.', true)
  })
})
$('recover-form').addEventListener('submit', (event) => {
  event.preventDefault()
  const value = $('recover-since').value
  const since = Date.parse(value)
  if (value === '' || Number.isNaN(since)) { result('Choose the time from which failed deliveries are sent again.', false); return }
  void webhookAction(async (webhook) => {
    const { data } = await api(`${wh(webhook.id)}/recover`, { method: 'POST', body: { since: new Date(since).toISOString() } })
    const rest = data.nextSince === undefined ? '' : ` More remain: recover again from ${new Date(data.nextSince).toLocaleString()}.`
    result(data.queued === 0
      ? 'Nothing to recover: no event failed for good since then (or each was delivered since).'
      : `${data.queued} failed ${data.queued === 1 ? 'event is' : 'events are'} queued again.${rest}`, true)
    await loadWebhook(webhook.id)
  })
})
$('deliveries-table').addEventListener('click', (event) => {
  const target = event.target instanceof Element ? event.target : null
  const show = target?.closest('button[aria-controls]')
  if (show !== null && show !== undefined) { void toggleAttempt(show); return }
  const replay = target?.closest('button[data-replay]')
  if (replay === null || replay === undefined) return
  const eventId = replay.getAttribute('data-replay')
  void webhookAction(async (webhook) => {
    const { data: before } = await api(`${wh(webhook.id)}/deliveries?limit=100`)
    const count = before.filter((d) => d.eventId === eventId && d.outcome !== 'pending').length
    const { data } = await api(`${wh(webhook.id)}/replay`, { method: 'POST', body: { eventIds: [eventId] } })
    if (data.queued === 0) { result(`Nothing was queued: ${eventId} is no longer kept, or already waits for a delivery.`, false); return }
    result(`${eventId} is queued again; waiting for its attempt…`, true)
    await loadWebhook(webhook.id)
    await follow(webhook.id, eventId, count, `The replay of ${eventId}`, result)
  })
})

$('test-form').addEventListener('submit', (event) => {
  event.preventDefault()
  const type = $('test-type').value
  const webhookId = $('test-webhook').value
  if (type === '' || webhookId === '') return
  const button = event.target.querySelector('button')
  button.disabled = true
  testResult(`Sending a test ${type}…`, true)
  api(`${wh(webhookId)}/test`, { method: 'POST', body: { type } })
    .then(async ({ data }) => {
      testResult(`Test ${type} queued as ${data.eventId}; waiting for its attempt…`, true)
      await follow(webhookId, data.eventId, 0, `The test ${type} (${data.eventId})`, testResult)
    })
    .catch((error) => { testResult(explain(error), false) })
    .finally(() => { button.disabled = false })
})
$('feed-filters').addEventListener('submit', (event) => {
  event.preventDefault()
  feedPages = []
  loadFeed(feedUrl()).catch((error) => { warn(explain(error)) })
})
$('feed-next').addEventListener('click', () => {
  if (feedNext === null) return
  feedPages.push(feedCurrent)
  loadFeed(feedNext).catch((error) => { feedPages.pop(); warn(explain(error)) })
})
$('feed-prev').addEventListener('click', () => {
  const previous = feedPages.pop()
  if (previous !== undefined) loadFeed(previous).catch((error) => { warn(explain(error)) })
})

$('rotate-form').addEventListener('submit', async (event) => {
  event.preventDefault()
  const hours = Number(new FormData(event.target).get('grace'))
  if (!Number.isFinite(hours) || hours < 0 || hours > 168) { warn('The grace period is 0 to 168 hours.'); return }
  try {
    const { data: created } = await api('/keys/me/rotate', { method: 'POST', body: { gracePeriodSeconds: Math.round(hours * 3600) } })
    $('new-key-value').textContent = created.key
    $('new-key').hidden = false
    $('dismiss-key').focus()
    say(`Key ${created.id} replaces this one. Copy it now: it is shown once.`)
    await loadKey()
  } catch (error) {
    warn(explain(error))
  }
})
$('dismiss-key').addEventListener('click', () => {
  $('new-key').hidden = true
  $('new-key-value').textContent = ''
  say('The new key is no longer shown.')
})

window.addEventListener('hashchange', () => {
  if (/^#link=/.test(location.hash)) { void open(); return }
  for (const id of ['status', 'alert', 'webhook-result']) $(id).textContent = ''
  showSecret(null)
  void route().then(() => { if (session !== null) document.querySelector('main section:not([hidden]) h2')?.focus() })
})

// Nothing is kept in the tab: a reload reads the session again.
void open()
