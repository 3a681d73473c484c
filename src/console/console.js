/* global document, window, Node, setInterval, sessionStorage, fetch, location, history, FormData, URLSearchParams, URL, navigator, getSelection */
// The operator console (docs/product.md section 10). Plain DOM, one module, no framework.
// Rules kept here:
// - The admin key lives in sessionStorage only (this tab), goes out in X-API-Key only, never in
//   a URL, localStorage or a cookie; "Sign out" removes it.
// - Every value from the API is inserted with textContent (or an SVG text node), never as HTML.
// - Everything goes through the public admin API (/v1/admin/...), as any client could.
// - Writes send If-Match with the key's ETag where the API honours it (PATCH, DELETE); a 412 is
//   explained and the key is shown again as it now is.
const STORAGE_KEY = 'petstore.console.apiKey'
const DAY_MS = 86_400_000
const EXPIRING_WITHIN_MS = 7 * DAY_MS // accounts/keys.status.ts

const $ = (id) => document.getElementById(id)
const views = ['sign-in', 'keys-view', 'key-view', 'deprecations-view']

// ---- small DOM helpers (text only) ---------------------------------------------------------

function el (tag, attributes = {}, ...children) {
  const node = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes)) {
    if (name === 'text') node.textContent = value
    else node.setAttribute(name, value)
  }
  for (const child of children) node.append(child)
  return node
}

function link (href, text) { return el('a', { href, text }) }

function cell (content, attributes = {}) {
  const td = el('td', attributes)
  if (content instanceof Node) td.append(content)
  else td.textContent = content === null || content === undefined ? '—' : String(content)
  return td
}

function dateTime (iso) {
  if (iso === null || iso === undefined) return '—'
  return iso.replace('T', ' ').replace(/\.\d+Z$/, ' UTC').replace(/Z$/, ' UTC')
}

/** "in 2 d 3 h", "in 4 min", "5 h ago". */
function relative (iso, now = Date.now()) {
  const ms = Date.parse(iso) - now
  const abs = Math.abs(ms)
  let text
  if (abs >= DAY_MS) text = `${Math.floor(abs / DAY_MS)} d ${Math.floor((abs % DAY_MS) / 3_600_000)} h`
  else if (abs >= 3_600_000) text = `${Math.floor(abs / 3_600_000)} h ${Math.floor((abs % 3_600_000) / 60_000)} min`
  else if (abs >= 60_000) text = `${Math.floor(abs / 60_000)} min`
  else text = `${Math.floor(abs / 1000)} s`
  return ms >= 0 ? `in ${text}` : `${text} ago`
}

/** A live countdown: refreshed every second by tick(). */
function countdown (iso) {
  const span = el('span', { 'data-until': iso, text: relative(iso) })
  return span
}
setInterval(() => {
  for (const span of document.querySelectorAll('[data-until]')) span.textContent = relative(span.getAttribute('data-until'))
}, 1000)

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
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'omit', cache: 'no-store', referrerPolicy: 'no-referrer' })
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
  if (status === 'expiring' || (status === 'rotated' && key.expiresAt !== null && Date.parse(key.expiresAt) > Date.now())) wrap.append(', expires ', countdown(key.expiresAt))
  if (status === 'banned') wrap.append(' until ', el('time', { datetime: key.ban.until, text: dateTime(key.ban.until) }), ' (', countdown(key.ban.until), ')')
  return wrap
}

const keyLabel = (key) => key.name === null ? `key ${key.id}` : key.name

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

function nextFromLink (header) {
  if (header === null) return null
  const match = /<([^>]+)>;\s*rel="next"/.exec(header)
  if (match === null) return null
  const url = new URL(match[1], new URL('/v1/admin/keys', location.href))
  return url.origin === location.origin ? url.pathname + url.search : null
}

async function loadKeys (url) {
  const { data, link: header } = await api(url)
  current = url
  next = nextFromLink(header)
  const body = $('keys-table').tBodies[0]
  body.replaceChildren(...data.map((key) => el('tr', { 'data-key-id': String(key.id) },
    el('th', { scope: 'row' }, link(`#/keys/${key.id}`, keyLabel(key))),
    cell(el('code', { text: key.prefix })),
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
  if (shown?.key.id !== id) {
    // Another key: nothing of the previous one stays on screen while this one loads.
    shown = null
    $('key-title').textContent = `Key ${id}`
    for (const node of [$('key-details'), $('chain'), $('usage-chart'), $('usage-table').tBodies[0], $('windows-table').tBodies[0], $('bans-table').tBodies[0]]) node.replaceChildren()
  }
  const { data: key, etag } = await api(`/v1/admin/keys/${id}`)
  shown = { key, etag }
  $('key-title').textContent = `${keyLabel(key)} (key ${key.id})`
  const details = [
    ['Prefix', el('code', { text: key.prefix })], ['Role', key.role], ['Plan', key.plan],
    ['Quotas', `${key.limits.perMinute} per minute, ${key.limits.perDay} per day`], ['Status', statusNode(key)],
    ['Created', dateTime(key.createdAt)], ['Expires', key.expiresAt === null ? 'never' : dateTime(key.expiresAt)],
    ['Last used', key.lastUsedAt === null ? 'never' : dateTime(key.lastUsedAt)]
  ]
  $('key-details').replaceChildren(...details.flatMap(([term, value]) => [el('dt', { text: term }), el('dd', {}, value)]))
  const chain = await chainOf(key)
  $('chain').replaceChildren(...chain.map((k) => el('li', {},
    k.id === key.id ? el('strong', { text: `${keyLabel(k)} (key ${k.id}, ${statusOf(k)})` }) : link(`#/keys/${k.id}`, `${keyLabel(k)} (key ${k.id}, ${statusOf(k)})`))))
  $('plan-plan').value = key.plan
  $('plan-per-minute').value = key.plan === 'enterprise' ? String(key.limits.perMinute) : ''
  $('plan-per-day').value = key.plan === 'enterprise' ? String(key.limits.perDay) : ''
  $('lift-ban').hidden = key.ban === null
  $('revoke').hidden = key.revokedAt !== null
  $('rotate-form').hidden = key.revokedAt !== null || key.replacedBy !== null
  $('confirm-revoke').hidden = true
  await Promise.all([loadUsage(key.id), loadWindows(key.id), loadBans(key.id)])
}

async function loadWindows (id) {
  const { data } = await api(`/v1/admin/keys/${id}/rate_limit`)
  const row = (name, w) => el('tr', {}, el('th', { scope: 'row', text: name }), cell(w.used, { class: 'num' }), cell(w.remaining, { class: 'num' }), cell(w.limit, { class: 'num' }), cell(countdown(new Date(w.reset * 1000).toISOString())))
  $('windows-table').tBodies[0].replaceChildren(row('minute', data.windows.minute), row('day', data.windows.day))
}

async function loadBans (id) {
  const { data } = await api(`/v1/admin/keys/${id}/bans`)
  const body = $('bans-table').tBodies[0]
  body.replaceChildren(...data.bans.map((b) => el('tr', {}, cell(dateTime(b.startedAt)), cell(dateTime(b.until)), cell(b.liftedAt === null ? 'no' : dateTime(b.liftedAt)), cell(b.reason))))
  if (data.bans.length === 0) body.append(el('tr', {}, el('td', { colspan: '4', text: 'Never banned.' })))
}

async function loadUsage (id) {
  const days = Number(new FormData($('usage-range')).get('days') ?? 30)
  const { data } = await api(`/v1/admin/keys/${id}/usage?days=${days}`)
  $('usage-table').tBodies[0].replaceChildren(...data.days.map((d) => el('tr', { 'data-date': d.date },
    el('th', { scope: 'row', text: d.date }), cell(d.allowed, { class: 'num' }), cell(d.limited, { class: 'num' }), cell(d.banned, { class: 'num' }))))
  if (data.days.length === 0) $('usage-table').tBodies[0].append(el('tr', {}, el('td', { colspan: '4', text: 'No traffic in the period.' })))
  $('usage-chart').replaceChildren(chart(data.days, days))
}

// ---- the usage chart: hand-written SVG, one stacked bar per UTC day -------------------------

const SVG = 'http://www.w3.org/2000/svg'
function svg (tag, attributes = {}) {
  const node = document.createElementNS(SVG, tag)
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value))
  return node
}

function chart (rows, days) {
  const byDate = new Map(rows.map((r) => [r.date, r]))
  const today = Math.floor(Date.now() / DAY_MS)
  const series = []
  for (let i = days - 1; i >= 0; i--) {
    const date = new Date((today - i) * DAY_MS).toISOString().slice(0, 10)
    series.push(byDate.get(date) ?? { date, allowed: 0, limited: 0, banned: 0 })
  }
  const width = 720; const height = 220; const left = 48; const bottom = 24; const top = 10
  const plotW = width - left - 8; const plotH = height - top - bottom
  const max = Math.max(1, ...series.map((d) => d.allowed + d.limited + d.banned))
  const step = plotW / series.length
  const barW = Math.max(1, step * 0.8)
  const total = series.reduce((sum, d) => sum + d.allowed + d.limited + d.banned, 0)
  const root = svg('svg', { class: 'chart', viewBox: `0 0 ${width} ${height}`, width, height, role: 'img', 'aria-labelledby': 'usage-chart-title' })
  const title = svg('title', { id: 'usage-chart-title' })
  title.textContent = `Requests per UTC day over the last ${days} days: ${total} in all. The table below lists the days with traffic.`
  root.append(title)
  for (const fraction of [0, 0.5, 1]) {
    const y = top + plotH - fraction * plotH
    root.append(svg('line', { class: fraction === 0 ? 'axis' : 'grid', x1: left, x2: width - 8, y1: y, y2: y }))
    const label = svg('text', { x: left - 6, y: y + 4, 'text-anchor': 'end' })
    label.textContent = String(Math.round(max * fraction))
    root.append(label)
  }
  series.forEach((d, i) => {
    const x = left + i * step + (step - barW) / 2
    const group = svg('g', { 'data-date': d.date, 'data-allowed': d.allowed, 'data-limited': d.limited, 'data-banned': d.banned })
    const tip = svg('title')
    tip.textContent = `${d.date}: ${d.allowed} allowed, ${d.limited} limited, ${d.banned} banned`
    group.append(tip)
    let y = top + plotH
    for (const part of ['allowed', 'limited', 'banned']) {
      const h = (d[part] / max) * plotH
      if (h <= 0) continue
      y -= h
      group.append(svg('rect', { class: part, x: x.toFixed(1), y: y.toFixed(1), width: barW.toFixed(1), height: h.toFixed(1) }))
    }
    root.append(group)
    if (i === 0 || i === series.length - 1 || (series.length > 10 && i % Math.ceil(series.length / 6) === 0)) {
      const label = svg('text', { x: (x + barW / 2).toFixed(1), y: height - 6, 'text-anchor': 'middle' })
      label.textContent = d.date.slice(5)
      root.append(label)
    }
  })
  return root
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
    if (op.sunsetAt !== null) facts.append('Sunset ', el('time', { datetime: op.sunsetAt, text: dateTime(op.sunsetAt) }), ' (', countdown(op.sunsetAt), ').')
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

// ---- routing (the hash names the view; it never holds the key) -------------------------------

async function route () {
  if (apiKey() === null) { show('sign-in'); return }
  const hash = location.hash
  const keyMatch = /^#\/keys\/(\d+)$/.exec(hash)
  try {
    if (keyMatch !== null) {
      show('key-view')
      await loadKey(Number(keyMatch[1]))
    } else if (hash === '#/deprecations') {
      show('deprecations-view')
      await loadDeprecations()
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
  try {
    const { data: created } = await api('/v1/admin/keys', { method: 'POST', body })
    newKeyShown(created)
    say(`Key ${created.id} created. Copy it now: it is shown once.`)
    event.target.reset()
    await loadKeys(current ?? listUrl())
  } catch (error) { warn(explain(error)) }
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
  try { await loadUsage(shown.key.id) } catch (error) { warn(explain(error)) }
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
    const { data: created } = await api(`/v1/admin/keys/${shown.key.id}/rotate`, { method: 'POST', body: { gracePeriodSeconds: Math.round(hours * 3600) } })
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

window.addEventListener('hashchange', () => { newKeyShown(null); $('status').textContent = ''; $('alert').textContent = ''; void route() })
// A fresh tab, or a reload: sign in again unless this tab already holds a key.
void route()
