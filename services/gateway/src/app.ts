import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest, LogController } from 'fastify';
import type { Config } from '@switchyard/shared/config/index.ts';
import type { Cipher } from '@switchyard/shared/crypto.ts';
import type { Knex } from '@switchyard/shared/db/index.ts';
import { startTenantErasure } from '@switchyard/shared/db/erasure.ts';
import { DestinationStore } from '@switchyard/shared/db/stores/destinations.ts';
import { TenantStore } from './tenant-store.ts';
import type { Bus, BusProducer } from '@switchyard/shared/bus/index.ts';
import type { Logger } from '@switchyard/shared/log.ts';
import { countPublishes, observeHttp } from '@switchyard/shared/metrics.ts';
import { type Readiness, readiness } from '@switchyard/shared/ops.ts';
import { type Auth, createAuth, type Principal, requireAdmin, requireTenantAccess } from './auth.ts';
import { registerAdmission, type ReadLag, startAdmission } from './admission.ts';
import { registerBodyBudget } from './body-budget.ts';
import { createAnnouncer } from './destination-changes.ts';
import { createSenderPresence } from './pending-reason.ts';
import { AppError } from '@switchyard/shared/errors.ts';
import { registerErrorHandling } from './errors.ts';
import { frameworkErrors, registerInputGuards } from './guards.ts';
import cors from '@fastify/cors';
import { registerJsonBody } from './json-body.ts';
import { registerMethodChecks } from './methods.ts';
import swagger from '@fastify/swagger';
import { attemptRoutes } from './routes/attempts.ts';
import { TENANT_PREFIXES } from './routes/common.ts';
import { createBody, destinationRoutes, patchBody } from './routes/destinations.ts';
import { documentTransforms, registerModels } from './openapi.ts';
import { eventRoutes } from './routes/events.ts';
import { healthRoutes } from './routes/health.ts';
import { OPERATIONS_MODELS, operationsRoutes } from './routes/operations.ts';
import { BODY_LIMIT_BYTES, PUBLISH_BATCH_BODY_LIMIT, publishBatchBodySchema, publishBodySchema, publishRoutes } from './routes/publish.ts';
import { REPLAY_MODELS, replayRoutes } from './routes/replay.ts';
import { scheduleRoutes } from './routes/schedule.ts';
import { retryBody, retryRoutes } from './routes/retry.ts';
import { createPublisher, summarisePublishes } from './publisher.ts';
import { portalRoutes } from './portal.ts';
import { RoutingCache } from './routing-cache.ts';
import { registerTypeNames, type TypeNames } from './type-names.ts';
import { registerValidators } from './validators.ts';
import { EventIdStore } from '@switchyard/shared/db/stores/event-ids.ts';
import type { Tracing } from '@switchyard/shared/tracing.ts';
import { schemaRoutes } from './routes/schemas.ts';
import { RESERVED_TENANT_IDS, tenantListRoutes, tenantRoutes, tenantUpsertBody } from './routes/tenants.ts';
import { OperationsStore } from '@switchyard/shared/db/stores/operations.ts';
import { QueryStore } from './queries/store.ts';
import './routes/deps.ts'; // the request's `principal` and the app's `routeTable`

export interface GatewayDeps {
  db: Knex;
  cipher: Cipher;
  producer: BusProducer;
  logger: Logger;
  /** The portal's built assets (default: services/portal/dist). */
  portalDir?: string;
  /** Readiness of Postgres and Kafka (shared/src/ops.ts); without it /readyz checks Postgres only. */
  readiness?: () => Promise<Readiness>;
  /** OpenTelemetry traces (shared/src/tracing.ts); absent or null: off. */
  tracing?: Tracing | null;
  /** Reads consumer lag, for the admission bound (PUBLISH_MAX_BACKLOG); without it the bound is off. */
  readLag?: ReadLag;
}

/** The Fastify instance with what every route shares: errors, guards, metrics, models, JSON only. */
function createApp(config: Config, logger: Logger): FastifyInstance {
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    bodyLimit: BODY_LIMIT_BYTES,
    // No per-request lines from fastify (set through its log controller: the top-level option is deprecated).
    logController: new LogController({ disableRequestLogging: true }),
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 256 },
    // Backstop of body-budget.ts's own timer: Node drops a request not received by then.
    requestTimeout: config.API_BODY_TIMEOUT_MS + 5000,
    frameworkErrors,
    // `__proto__` and `constructor` are data like any key: JSON.parse makes them own properties, and
    // nothing here assigns keys of input onto a plain object (merge-patch.ts defines them).
    onProtoPoisoning: 'ignore',
    onConstructorPoisoning: 'ignore',
    // Requests that come while the gateway closes are answered below, in the API's error shape.
    return503OnClosing: false,
  });
  registerErrorHandling(app);
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', async () => {
    if (closing) throw new AppError('SERVICE_UNAVAILABLE', 'The gateway is shutting down. Retry shortly.');
  });
  // Bodies validated as sent, query strings and path parameters coerced from text (validators.ts).
  registerValidators(app);
  // 405 with Allow for a known path's other methods (before authentication: no credential needed to learn it).
  registerMethodChecks(app, RESERVED_TENANT_IDS);
  registerInputGuards(app);
  // Rate and latency by route pattern (never the raw URL: bounded labels).
  app.addHook('onResponse', async (req, reply) => {
    observeHttp(req.method, req.routeOptions.url, reply.statusCode, reply.elapsedTime / 1000);
  });
  // Responses are sent as JSON.stringify writes them: the route's response schemas document them
  // (and the e2e suites check them against the document) but never filter or coerce a field.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  registerModels(app, {
    TenantUpsert: tenantUpsertBody,
    DestinationCreate: createBody,
    DestinationUpdate: patchBody,
    PublishRequest: publishBodySchema,
    PublishBatchRequest: publishBatchBodySchema,
    RetryRequest: retryBody,
    ...OPERATIONS_MODELS,
    ...REPLAY_MODELS,
  });
  registerTypeNames(app, config.API_TYPE_NAMES as TypeNames);
  // The API speaks JSON only: anything else is refused with 415 rather than parsed as text.
  app.removeContentTypeParser('text/plain');
  registerJsonBody(app);
  const routeTable: { method: string; url: string }[] = [];
  app.decorate('routeTable', routeTable);
  app.addHook('onRoute', (r) => {
    if ((r.schema as { hide?: boolean } | undefined)?.hide) return; // pages (the portal), not API operations
    for (const method of [r.method].flat()) routeTable.push({ method, url: r.url });
  });

  return app;
}

/** CORS, authentication (the request's `principal`), the admission bound and the body budget, registered in this order. */
async function registerAccess(
  app: FastifyInstance,
  config: Config,
  auth: Auth,
  deps: Pick<GatewayDeps, 'readLag' | 'logger' | 'db'>,
): Promise<void> {
  // Browsers on the allowed origins may call the API with a tenant token (bearer header, no
  // cookies). Registered before authentication so that preflight requests, which carry no
  // credential, are answered here.
  if (config.CORS_ALLOWED_ORIGINS.length) {
    await app.register(cors, {
      origin: config.CORS_ALLOWED_ORIGINS.includes('*') ? '*' : [...config.CORS_ALLOWED_ORIGINS],
      methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
      allowedHeaders: ['authorization', 'content-type'],
      maxAge: 600,
    });
  }

  app.decorateRequest('principal', null as unknown as { getter: () => Principal });
  // Every route but health needs a credential; the principal decides what it may touch.
  app.addHook('onRequest', async (req: FastifyRequest) => {
    if (req.routeOptions.config && (req.routeOptions.config as { public?: boolean }).public) return;
    if (!req.routeOptions.url) return; // unknown route: the 404 handler answers
    req.principal = await auth.authenticate(req.headers.authorization);
    // Whether this credential may call the route at all comes before anything about the request
    // (body, query): a tenant token on an admin-only route or on another tenant's path is a 403
    // whatever it sent, never a 422 for one body and a 403 for another.
    if (req.routeOptions.config.adminOnly) requireAdmin(req.principal);
    const pathTenant = (req.params as { tenant_id?: string } | undefined)?.tenant_id;
    if (pathTenant !== undefined) requireTenantAccess(req.principal, pathTenant);
  });

  // Publishing refused while the delivery backlog is over PUBLISH_MAX_BACKLOG (admission.ts).
  if (config.PUBLISH_MAX_BACKLOG > 0 && deps.readLag)
    registerAdmission(
      app,
      startAdmission({
        maxBacklog: config.PUBLISH_MAX_BACKLOG,
        readLag: deps.readLag,
        senderTypes: createSenderPresence(deps.db),
        log: deps.logger,
      }),
    );

  // Request bodies held at once, as their bytes arrive, and how long one may take (body-budget.ts).
  registerBodyBudget(app, {
    maxInFlightBytes: config.API_MAX_INFLIGHT_BYTES,
    bodyTimeoutMs: config.API_BODY_TIMEOUT_MS,
    bodyLimit: PUBLISH_BATCH_BODY_LIMIT,
  });
}

/** The address the API listens on, as a URL: once listening, the port it bound (API_PORT 0 picks one). */
export function listeningUrl(config: Config, app: FastifyInstance): string {
  const bound = app.server.address();
  const port = bound !== null && typeof bound === 'object' ? bound.port : config.API_PORT;
  return `http://${config.API_HOST.includes(':') ? `[${config.API_HOST}]` : config.API_HOST}:${port}`;
}

/** Where this deployment serves the API (portal links, the OpenAPI document's server): API_BASE_URL, else where it listens. */
const baseUrlOf = (config: Config, app: FastifyInstance) => () => config.API_BASE_URL || listeningUrl(config, app);

/** The OpenAPI document (fastify swagger), served at /api/v1/openapi.json. */
async function registerDocs(app: FastifyInstance, config: Config): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Switchyard API',
        version: '1.0.0',
        description: 'Multi-tenant event delivery: tenants, destinations, publish, events and attempts.',
      },
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', description: 'The admin API key, or a tenant JWT from GET /api/v1/{tenant_id}/token.' },
        },
      },
      security: [{ bearer: [] }],
    },
    // Components are named by their model's $id (Tenant, Destination, ...), not def-0, def-1.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
    ...documentTransforms(config, baseUrlOf(config, app)),
  });
  app.get('/api/v1/openapi.json', { config: { public: true }, schema: { hide: true } }, async () => app.swagger());
}

/** Builds the gateway app; main.ts alone listens and handles signals, tests use app.inject(). */
export async function build(config: Config, deps: GatewayDeps): Promise<FastifyInstance> {
  const app = createApp(config, deps.logger);
  const { db, producer } = deps;
  const tenants = new TenantStore(deps.db);
  const destinations = new DestinationStore(deps.db, deps.cipher);
  const routing = new RoutingCache(destinations, config.ROUTING_CACHE_TTL_MS);
  // Kicked by a tenant's deletion; the attempts service also runs it every minute.
  const erasure = startTenantErasure(deps.db, { log: deps.logger });
  app.addHook('onClose', () => erasure.stop());
  const auth = createAuth(config.API_KEY, config.API_JWT_SECRET);
  const announce = createAnnouncer(deps.producer, deps.logger);
  const queries = new QueryStore(deps.db, config.API_PAGE_MAX_BYTES);
  const publish = summarisePublishes(
    app,
    deps.logger,
    countPublishes(
      createPublisher({
        producer,
        eventIds: new EventIdStore(db),
        routing,
        log: deps.logger,
        lingerMs: config.PUBLISH_LINGER_MS,
        timeoutMs: config.PUBLISH_TIMEOUT_MS,
        tracing: deps.tracing ?? null,
      }),
    ),
  );

  await registerAccess(app, config, auth, deps);
  await registerDocs(app, config);

  // Any change to a tenant's state drops this instance's routing view of it before the answer goes
  // out, so a publish accepted after the answer sees the change.
  app.addHook('onSend', async (req, reply) => {
    if (req.method === 'GET' || reply.statusCode >= 400) return;
    const tenantId =
      (req.params as { tenant_id?: string } | undefined)?.tenant_id ??
      (req.principal?.kind === 'tenant' ? req.principal.tenantId : undefined);
    if (tenantId) routing.invalidate(tenantId);
  });

  await app.register(portalRoutes(config, deps.portalDir));
  // Each route module gets only the parts it uses (its `...RouteDeps`).
  await app.register(healthRoutes({ db, readiness: deps.readiness ?? (() => readiness({ db, bus: {} as Bus })) }));
  await app.register(retryRoutes({ db, destinations, producer }));
  await app.register(publishRoutes({ topics: config.TOPICS, publish }), { prefix: '/api/v1' });
  await app.register(schemaRoutes({ topics: config.TOPICS, tenants }), { prefix: '/api/v1' });
  await app.register(tenantListRoutes({ tenants }), { prefix: '/api/v1' });
  const baseUrl = baseUrlOf(config, app);
  const operations = new OperationsStore(db);
  // Both path forms of interface.md serve the same handlers, and with a tenant token the tenant
  // segment may be left out altogether.
  for (const prefix of TENANT_PREFIXES) {
    await app.register(tenantRoutes({ tenants, db, announce, erasure, auth, baseUrl }), { prefix });
    await app.register(destinationRoutes({ tenants, destinations, announce, config, db }), { prefix });
    await app.register(attemptRoutes({ tenants, destinations, queries }), { prefix });
    await app.register(eventRoutes({ tenants, queries, db }), { prefix });
    await app.register(replayRoutes({ tenants, destinations, db, producer, announce }), { prefix });
    await app.register(scheduleRoutes({ tenants, db }), { prefix });
    await app.register(operationsRoutes({ tenants, operations, queries, typeNames: config.API_TYPE_NAMES as TypeNames }), { prefix });
  }
  return app;
}
