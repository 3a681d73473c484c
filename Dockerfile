# The Petstore API image. Node.js 24 runs the TypeScript sources directly: no build stage.
# `npm run test:image` builds it with podman and runs it (docs/operating.md, "Tested for real"); CI does too.
# With podman, build with `--format docker`: the OCI format has no HEALTHCHECK.
ARG NODE_IMAGE=node:24-slim
FROM ${NODE_IMAGE}

WORKDIR /app

# Production dependencies only: nothing under src/ imports a devDependency (TypeScript, ESLint,
# the linters and test tools). Install scripts are skipped: the one that matters, the `node`
# package's, would download a second Node.js 24 beside the one this image already has.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

COPY src ./src

# The memory settings of `npm start` (docs/performance.md, "Memory"): a young generation of 8 MiB
# instead of 32, two glibc arenas, and the compile cache below. NODE_OPTIONS reaches every node
# process of the container (the healthcheck and `podman exec … keys` too).
ENV HOST=0.0.0.0 \
    PORT=3000 \
    MALLOC_ARENA_MAX=2 \
    NODE_OPTIONS=--max-semi-space-size=4

# SQLite, when DATABASE_URL is left at its default, writes under /app/data: mount a volume there.
RUN mkdir -p /app/data /app/.cache/node && chown -R node:node /app/data /app/.cache
USER node

# Node's compile cache, filled here by importing the server's modules once as `serve` does, as
# node and under the settings above (Node keeps a directory per user id, and V8 refuses code
# cached under other flags). A start whose modules all come from it never loads the type stripper
# (amaro: about 18 MiB of RSS for the life of the process). Modules loaded only later (the
# PostgreSQL store, ioredis) are added on first use. `npm run test:image` checks the saving.
ENV NODE_COMPILE_CACHE=/app/.cache/node
RUN node --heap-growing-percent=20 --no-concurrent-recompilation --input-type=module -e "await import('/app/src/cli/main.ts'); await import('/app/src/cli/serve.ts'); await import('/app/src/server.ts')"

# What is exposed: the API on 3000 (HOST=0.0.0.0 above). /metrics, with /healthz and /readyz, is
# served on a listener of its own, 127.0.0.1:9464 by default (METRICS_HOST, METRICS_PORT): inside
# the container only, so `docker run -p 3000:3000` publishes the API and nothing else. To let a
# Prometheus on a private network scrape it, set METRICS_HOST=0.0.0.0 and publish or route 9464
# to that network only (docs/operating.md, "What is exposed").
EXPOSE 3000

# /readyz: 200 while the database answers (also when degraded: Redis down means per-instance
# counters, not an unhealthy instance), 503 otherwise. Asked on the private listener: the public
# one's connection caps, full under a flood, never refuse the container's own probe. The slim
# image has no curl. node:http, not fetch: fetch loads undici, and on a loaded 2-CPU machine the
# probe's own start once took more than its 3 s (a healthy instance reported unhealthy); 10 s now.
HEALTHCHECK --interval=10s --timeout=10s --start-period=20s --retries=3 \
  CMD ["node", "-e", "require('node:http').get({ host: '127.0.0.1', port: process.env.METRICS_PORT || 9464, path: '/readyz', timeout: 8000 }, (r) => process.exit(r.statusCode === 200 ? 0 : 1)).on('error', () => process.exit(1)).on('timeout', () => process.exit(1))"]

# Exec form: node is PID 1 and receives SIGTERM itself (it drains requests, closes the stores,
# exits 0). --heap-growing-percent and --no-concurrent-recompilation as in the `petstore` shebang
# (docs/performance.md "Memory"): Node refuses them in NODE_OPTIONS, so they are given here and in
# the compile-cache step above. Migrations run at start under a lock; `migrate` runs them alone.
CMD ["node", "--heap-growing-percent=20", "--no-concurrent-recompilation", "src/cli/main.ts", "serve"]
