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

# SQLite, when DATABASE_URL is left at its default, writes under /app/data: mount a volume there.
RUN mkdir -p /app/data && chown node:node /app/data
USER node

# The memory settings of `npm start` (docs/performance.md, "Memory"): a young generation of 8 MiB
# instead of 32 and two glibc arenas keep RSS under 150 MiB. NODE_OPTIONS reaches every node
# process of the container (the healthcheck and `podman exec … keys` too).
ENV HOST=0.0.0.0 \
    PORT=3000 \
    MALLOC_ARENA_MAX=2 \
    NODE_OPTIONS=--max-semi-space-size=4
EXPOSE 3000

# /readyz: 200 while the database answers (also when degraded: Redis down means per-instance
# counters, not an unhealthy instance), 503 otherwise. The slim image has no curl.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# Exec form: node is PID 1 and receives SIGTERM itself (it drains requests, closes the stores,
# exits 0). Migrations run at start under a lock; `migrate` runs them alone.
CMD ["node", "src/cli/main.ts", "serve"]
