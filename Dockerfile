# syntax=docker/dockerfile:1
# One image for every Switchyard service. The default command runs the gateway; the other services
# use the same image with another command (docker-compose.yml does that):
#   node dist/services/router/src/main.js | node dist/services/sender/src/main.js
#   node dist/services/attempts/src/main.js | node dist/shared/src/db/migrate-cli.js
# The services run as the JavaScript `npm run build` emits (infra/build.ts: Node's own type
# stripping, done once at build time), not as TypeScript: stripping at load costs ~40 MB of RSS
# per process that is never given back.
ARG NODE_IMAGE=node:24-slim

# The tenant portal is a browser app built with vite (dev dependencies): its own stage, of which
# only the built assets reach the image (the gateway serves them at /portal).
FROM ${NODE_IMAGE} AS portal
WORKDIR /app
COPY package.json package-lock.json ./
COPY shared/package.json shared/
COPY services/gateway/package.json services/gateway/
COPY services/router/package.json services/router/
COPY services/sender/package.json services/sender/
COPY services/attempts/package.json services/attempts/
COPY services/embedded/package.json services/embedded/
COPY services/portal/package.json services/portal/
RUN --mount=type=cache,target=/root/.npm \
    npm ci --no-audit --no-fund --ignore-scripts
COPY services/portal/ services/portal/
RUN cd services/portal && ../../node_modules/.bin/vite build --logLevel warn

FROM ${NODE_IMAGE} AS deps
WORKDIR /app
ENV NODE_ENV=production
# Only the manifests first, so the npm ci layer is reused until a dependency changes. Every
# workspace's package.json must be present: npm ci links the workspaces (node_modules/@switchyard/*
# -> ../../shared, ../../services/*) and checks them against package-lock.json.
COPY package.json package-lock.json ./
COPY shared/package.json shared/
COPY services/gateway/package.json services/gateway/
COPY services/router/package.json services/router/
COPY services/sender/package.json services/sender/
COPY services/attempts/package.json services/attempts/
COPY services/embedded/package.json services/embedded/
COPY services/portal/package.json services/portal/
COPY packages/client/package.json packages/client/
RUN --mount=type=cache,target=/root/.npm \
    npm ci --omit=dev --no-audit --no-fund
# The sources after the install (.dockerignore keeps every node_modules/ of the build context out,
# so a workspace's own node_modules, e.g. services/sender/node_modules, comes from npm ci above).
COPY shared/ shared/
COPY services/ services/
COPY infra/build.ts infra/
COPY --from=portal /app/services/portal/dist services/portal/dist
RUN node --disable-warning=ExperimentalWarning infra/build.ts --out dist

FROM ${NODE_IMAGE}
WORKDIR /app
# In a container the gateway must listen on every interface to be reachable (the default,
# 127.0.0.1, is for running on a host). API_PORT keeps its default, 3333.
ENV NODE_ENV=production \
    API_HOST=0.0.0.0
# A 4 MB young generation (V8 grows it to 32 MB under load): peak RSS under load 250-390 -> 130-250 MB
# per service, with equal or better throughput (docs/performance.md, "Service memory").
# A 1 GiB old generation: far above what any service holds (each bounds its memory in flight), but
# under 2 GiB V8 grows the heap by 1.3-2x its live data instead of up to 4x: peak RSS (VmHWM) 121-141
# MB for gateway, router and attempts and 245 MB for the sender, a quarter to a third less, for
# 5-10% more CPU per delivery (docs/performance.md, "Heap limit 1024 MiB"). Without it: NODE_OPTIONS=--max-semi-space-size=4.
# Raise it with API_MAX_INFLIGHT_BYTES / API_PAGE_MAX_BYTES / SENDER_MAX_INFLIGHT_BYTES if you raise
# those far.
# The benchmark reads this line and runs the services with it.
ENV NODE_OPTIONS="--max-semi-space-size=4 --max-old-space-size=1024"
# glibc's malloc: allocations from 128 KiB (Kafka fetch responses, large bodies) are mapped and
# unmapped on their own instead of the dynamic threshold moving them into the C heap, which then
# could not shrink. The sender's C heap under the hanging benchmark 54 -> 14-21 MB, no CPU cost
# seen (docs/performance.md, "glibc malloc"). The benchmark reads these lines too.
ENV MALLOC_MMAP_THRESHOLD_=131072
ENV MALLOC_TRIM_THRESHOLD_=1048576
# At most two malloc arenas instead of eight per core: V8's and libuv's worker threads otherwise each
# fill an arena of their own. Peak RSS 4-8 MB lower for gateway, router and attempts in four hanging
# benchmark runs against four without (the sender's within its spread), no CPU cost seen (docs/performance.md,
# "glibc malloc"). The benchmark reads it too.
ENV MALLOC_ARENA_MAX=2
# Owned by root and not writable by the user the services run as: they write nothing to disk.
COPY --from=deps /app /app
# The node image's unprivileged user (uid 1000).
USER node
EXPOSE 3333
CMD ["node", "dist/services/gateway/src/main.js"]
