/**
 * The parts route modules are built from, and the request fields they read. Each route module
 * declares the narrow deps object it needs from these (its `...RouteDeps` interface); app.ts builds
 * the parts once and hands every module only its own, so no route imports app.ts.
 */
import type { Principal } from '../auth.ts';
import type { TenantStore } from '../tenant-store.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who is calling, set by app.ts's authentication hook (every route but the public ones). */
    principal: Principal;
  }
  interface FastifyInstance {
    /** Every route registered, for the OpenAPI coverage test. */
    routeTable: { method: string; url: string }[];
  }
}

/** Whether a tenant exists: what `existingTenant` needs. */
export type TenantCheck = Pick<TenantStore, 'exists'>;

/** Starts erasing deleted tenants' data now, in the background (shared/src/db/erasure.ts). */
export interface Erasure {
  kick(): void;
}
