/* global window, document, fetch, location, CSS, URL, Request */
// Boots Scalar's API reference on /docs and adds the one feature Scalar lacks: a per-operation
// try-it switch (`x-hideTryItPanel: true`). Why it is done this way: the comment at the top of
// src/openapi/docs.ts. Plain browser JavaScript, served as is (no build step); src/openapi/docs.ts
// serves it after Scalar's bundle, which defines window.Scalar.

const EXTENSION = 'x-hideTryItPanel'
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']

/** The operations whose try-it panel is switched off: [{ method: 'GET', path: '/store/orders' }]. */
function findHiddenOperations (openapi) {
  const hidden = []
  for (const [path, item] of Object.entries(openapi.paths ?? {})) {
    for (const method of METHODS) {
      if (item?.[method]?.[EXTENSION] === true) hidden.push({ method: method.toUpperCase(), path })
    }
  }
  return hidden
}

/**
 * Scalar gives an operation's element the id `<document>/[tag/<tag>/]<METHOD><path>`, its deep
 * link, and the API client's sidebar entry the same string in data-sidebar-id. One rule per
 * operation hides its "Test Request" button wherever it is listed, including operations Scalar
 * renders only when they scroll into view, and its entry in the client's sidebar.
 */
function hideTryItCss (hidden) {
  return hidden.map(({ method, path }) => {
    const suffix = CSS.escape(`/${method}${path}`)
    return `[id$="${suffix}"] .show-api-client-button, .scalar-client [data-sidebar-id$="${suffix}"] { display: none !important; }`
  }).join('\n')
}

const escapeRegExp = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** Path prefix of each server (`/v1` for `servers: [{ url: '/v1' }]`), resolved against the page as Scalar does. */
function serverBasePaths (openapi) {
  const servers = openapi.servers?.length ? openapi.servers : [{ url: '/' }]
  return servers.map((server) => {
    const url = String(server.url ?? '/').replace(/\{([^}]+)\}/g, (_, name) => server.variables?.[name]?.default ?? '')
    return new URL(url, location.href).pathname.replace(/\/+$/, '')
  })
}

/** Method plus a pathname pattern for each switched-off operation: `{petId}` matches one segment. */
function blockedRequestMatchers (openapi, hidden) {
  const prefixes = serverBasePaths(openapi).map(escapeRegExp).join('|')
  return hidden.map(({ method, path }) => {
    const template = escapeRegExp(path).replace(/\\\{[^}]*\\\}/g, '[^/]+')
    return { method, path, pattern: new RegExp(`^(?:${prefixes})${template}/?$`) }
  })
}

/**
 * Scalar's API client sends every request through customFetch, however the client reached the
 * operation (its sidebar or search, the send hotkey, an edited address bar). A rejected promise
 * becomes an error toast in the client, and the request never leaves the browser.
 */
function guardedFetch (matchers) {
  return (input, init) => {
    const method = (input instanceof Request ? input.method : init?.method ?? 'GET').toUpperCase()
    const { pathname } = new URL(input instanceof Request ? input.url : String(input), location.href)
    const blocked = matchers.find((matcher) => matcher.method === method && matcher.pattern.test(pathname))
    if (blocked !== undefined) {
      return Promise.reject(new Error(`Try it is switched off for ${blocked.method} ${blocked.path} on this page.`))
    }
    return fetch(input, init)
  }
}

/**
 * A Scalar plugin: Scalar renders an extension's component inside each operation carrying the
 * extension. A component whose render function returns a string renders a text node, so this
 * needs no Vue import. It tells readers why the operation has no "Test Request" button.
 */
const tryItNoticePlugin = () => ({
  name: 'petstore-try-it-switch',
  extensions: [{
    name: EXTENSION,
    component: {
      inheritAttrs: false,
      render () {
        return this.$attrs[EXTENSION] === true ? 'Try it is switched off for this operation.' : ''
      }
    }
  }]
})

async function main (root) {
  const specUrl = root.dataset.openapiUrl
  const response = await fetch(specUrl, { headers: { accept: 'application/json' } })
  if (!response.ok) throw new Error(`GET ${specUrl} answered ${response.status}`)
  const openapi = await response.json()
  const hidden = findHiddenOperations(openapi)

  window.Scalar.createApiReference(root, {
    // The document we just fetched, so the customisations and the page agree on one version.
    content: openapi,
    documentDownloadType: 'json',
    defaultOpenAllTags: true,
    // Everything comes from this API: no web fonts, telemetry, hosted agent, MCP, developer
    // toolbar, nor the "Open API Client" link to client.scalar.com.
    withDefaultFonts: false,
    telemetry: false,
    agent: { disabled: true },
    mcp: { disabled: true },
    showDeveloperTools: 'never',
    hideClientButton: true,
    persistAuth: false,
    // Scalar's default, pinned: hideTryItCss relies on ids ending in `/<METHOD><path>`.
    generateOperationSlug: (operation) => `${operation.method.toUpperCase()}${operation.path}`,
    customCss: hideTryItCss(hidden),
    customFetch: guardedFetch(blockedRequestMatchers(openapi, hidden)),
    plugins: [tryItNoticePlugin]
  })
}

const root = document.getElementById('petstore-docs')
main(root).catch((error) => {
  root.setAttribute('role', 'alert')
  root.textContent = `The API reference could not be loaded: ${error.message}`
})
