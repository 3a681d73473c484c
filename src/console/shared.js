/* global document, Node, URL, location, setInterval */
// What /console and /portal share (issue 50: "share what /console already has instead of a second
// copy"): the text-only DOM helpers, times, live countdowns, Link paging and the hand-written SVG
// usage chart. Both pages list this file before their own module; it puts its helpers on
// globalThis.PetstoreUI because the pages' assets have content-hashed names, so a static
// `import './shared.js'` could not name it (and an import map would be an inline script, which
// the CSP forbids). Every value goes in with textContent or an SVG text node, never as HTML.
const DAY_MS = 86_400_000

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

/** "2026-11-21 12:00:30 UTC" (the console shows every time in UTC). */
function utcText (iso) {
  if (iso === null || iso === undefined) return '—'
  return iso.replace('T', ' ').replace(/\.\d+Z$/, ' UTC').replace(/Z$/, ' UTC')
}

const LOCAL = new Intl.DateTimeFormat(undefined, {
  year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit', timeZoneName: 'short'
})

/** The time in the viewer's zone, as the browser words it. */
function localText (iso) {
  if (iso === null || iso === undefined) return '—'
  const ms = Date.parse(iso)
  return Number.isNaN(ms) ? String(iso) : LOCAL.format(ms)
}

/** A <time> in the viewer's zone, with the UTC instant on hover (title) and in `datetime`. */
function timeNode (iso) {
  if (iso === null || iso === undefined) return document.createTextNode('—')
  return el('time', { datetime: iso, title: utcText(new Date(Date.parse(iso)).toISOString()), text: localText(iso) })
}

/** "in 2 d 3 h", "in 4 min 5 s", "5 h ago". */
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

/**
 * A live countdown: every [data-until] is refreshed each second by the one timer below.
 * `passed` is said once the time has come, where "N s ago" would be wrong: a rate-limit
 * window that has reset is fresh, not late.
 */
function countdown (iso, passed) {
  const attributes = { 'data-until': iso, text: untilText(iso, passed ?? null) }
  if (passed !== undefined) attributes['data-passed'] = passed
  return el('span', attributes)
}
function untilText (iso, passed, now = Date.now()) {
  return passed !== null && Date.parse(iso) <= now ? passed : relative(iso, now)
}
setInterval(() => {
  for (const span of document.querySelectorAll('[data-until]')) {
    span.textContent = untilText(span.getAttribute('data-until'), span.getAttribute('data-passed'))
  }
}, 1000)

/** The next page's path from a Link header, on this origin only; null when there is none. */
function nextFromLink (header, base) {
  if (header === null || header === undefined) return null
  const match = /<([^>]+)>;\s*rel="next"/.exec(header)
  if (match === null) return null
  const url = new URL(match[1], new URL(base, location.href))
  return url.origin === location.origin ? url.pathname + url.search : null
}

// ---- the usage chart: hand-written SVG, one stacked bar per UTC day -------------------------

const SVG = 'http://www.w3.org/2000/svg'
function svg (tag, attributes = {}) {
  const node = document.createElementNS(SVG, tag)
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value))
  return node
}

/** The UTC day `offset` days after `day` ("2026-11-21"). */
function addDays (day, offset) {
  return new Date(Date.parse(`${day}T00:00:00Z`) + offset * DAY_MS).toISOString().slice(0, 10)
}

/**
 * One stacked bar per UTC day for `days` days ending with `lastDay` (today, UTC, by default),
 * days without traffic included. `parts` names the counts stacked, bottom first, each with its
 * CSS class and words: [{ key: 'allowed', label: 'allowed' }, …]. A <title> per bar and the
 * chart's own title (`titleId`) say the figures; the page puts a table beside it.
 */
function usageChart (rows, { days, parts, titleId, lastDay = new Date().toISOString().slice(0, 10) }) {
  const byDate = new Map(rows.map((r) => [r.date, r]))
  const series = []
  for (let i = days - 1; i >= 0; i--) {
    const date = addDays(lastDay, -i)
    series.push(byDate.get(date) ?? { date })
  }
  const count = (d, key) => Number(d[key] ?? 0)
  const sum = (d) => parts.reduce((s, p) => s + count(d, p.key), 0)
  const width = 720; const height = 220; const left = 48; const bottom = 24; const top = 10
  const plotW = width - left - 8; const plotH = height - top - bottom
  const max = Math.max(1, ...series.map(sum))
  const step = plotW / series.length
  const barW = Math.max(1, step * 0.8)
  const total = series.reduce((s, d) => s + sum(d), 0)
  const root = svg('svg', { class: 'chart', viewBox: `0 0 ${width} ${height}`, width, height, role: 'img', 'aria-labelledby': titleId })
  const title = svg('title', { id: titleId })
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
    const group = svg('g', { 'data-date': d.date })
    for (const p of parts) group.setAttribute(`data-${p.key.toLowerCase()}`, String(count(d, p.key)))
    const tip = svg('title')
    tip.textContent = `${d.date}: ${parts.map((p) => `${count(d, p.key)} ${p.label}`).join(', ')}`
    group.append(tip)
    let y = top + plotH
    for (const p of parts) {
      const h = (count(d, p.key) / max) * plotH
      if (h <= 0) continue
      y -= h
      const bar = { class: p.className ?? p.key, x: x.toFixed(1), y: y.toFixed(1) }
      Object.assign(bar, { width: barW.toFixed(1), height: h.toFixed(1) })
      group.append(svg('rect', bar))
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

/**
 * A loader's turns: each call takes one, and draws only while it is still the latest. A late
 * answer to an earlier call (the user moved to another key or endpoint, or pressed Find, a range
 * or Next meanwhile) is dropped instead of overwriting what was asked for after it.
 */
function turns () {
  let latest = 0
  return () => { const mine = ++latest; return () => mine === latest }
}

globalThis.PetstoreUI = Object.freeze({
  DAY_MS, el, link, cell, utcText, localText, timeNode, relative, countdown, nextFromLink, svg, addDays, usageChart,
  turns
})
