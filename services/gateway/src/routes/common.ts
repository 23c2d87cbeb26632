import type { FastifyRequest } from 'fastify';
import type { QueryStore } from '../queries/store.ts';
import { AppError } from '@switchyard/shared/errors.ts';
import { ID_PATTERN } from '@switchyard/shared/events/storable.ts';
import { requireTenantAccess } from '../auth.ts';
import type { TenantCheck } from './deps.ts';

/** Tenant-scoped routes are served under three prefixes: both path forms, and none (tenant from the token). */
export const TENANT_PREFIXES = ['/api/v1/tenants/:tenant_id', '/api/v1/:tenant_id', '/api/v1'] as const;

export type TenantReq = FastifyRequest<{ Params: { tenant_id?: string; destination_id?: string } }>;

/** Names to string values; other JSON values are refused (bodies are validated as sent), never converted. */
export const stringMap = {
  type: 'object',
  description: 'String values only: a number, boolean, object or null value is refused (422), never converted.',
  additionalProperties: { type: 'string' },
} as const;
/** A merge patch of a stringMap: a null value removes its name. */
export const stringMapPatch = {
  type: ['object', 'null'],
  description: 'String values, or null to remove a name; a number, boolean or object value is refused (422), never converted.',
  additionalProperties: { type: ['string', 'null'] },
} as const;
/** A tenant, destination or event id (ID_PATTERN: the documented alphabet and length). */
export const idParam = { type: 'string', minLength: 1, maxLength: 255, pattern: ID_PATTERN } as const;

/** The tenant a request addresses, checked against the caller's credential. */
export function tenantOf(req: TenantReq): string {
  const id = req.params.tenant_id ?? (req.principal.kind === 'tenant' ? req.principal.tenantId : undefined);
  if (!id) throw AppError.validation([{ path: 'params.tenant_id', message: 'is required with the admin API key' }]);
  requireTenantAccess(req.principal, id);
  return id;
}

/** As tenantOf, and the tenant must exist. */
export async function existingTenant(tenants: TenantCheck, req: TenantReq): Promise<string> {
  const id = tenantOf(req);
  if (!(await tenants.exists(id))) throw new AppError('TENANT_NOT_FOUND');
  return id;
}

/** As tenantOf, and the tenant and its destination (params.destination_id) must exist: one query for both. */
export async function existingDestination(queries: QueryStore, req: TenantReq): Promise<{ tenantId: string; destinationId: string }> {
  const tenantId = tenantOf(req);
  const destinationId = req.params.destination_id ?? '';
  const found = await queries.exists(tenantId, destinationId);
  if (!found.tenant) throw new AppError('TENANT_NOT_FOUND');
  if (!found.destination) throw new AppError('DESTINATION_NOT_FOUND');
  return { tenantId, destinationId };
}

/** Query values that may come as x=a, x=a&x=b, x[]=a or x[0]=a, as one list. */
export function multi(query: Record<string, unknown>, name: string): string[] | undefined {
  const out: string[] = [];
  // The name may hold brackets itself (filters[topic]): matched as text, not as a pattern.
  const indexed = new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\[\\d+\\]$`);
  for (const [k, v] of Object.entries(query)) {
    if (k === name || k === `${name}[]` || indexed.test(k)) {
      for (const x of Array.isArray(v) ? v : [v]) if (typeof x === 'string' && x !== '') out.push(...x.split(','));
    }
  }
  return out.length ? out : undefined;
}
