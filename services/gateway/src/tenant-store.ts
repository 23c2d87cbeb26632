import type { Knex } from '@switchyard/shared/db/index.ts';
import type { Tenant } from '@switchyard/shared/model/index.ts';
import { type ListPage, type Page, paginate } from '@switchyard/shared/db/paging.ts';

interface TenantRow {
  id: string;
  metadata: Record<string, string> | null;
  created_at: Date;
  updated_at: Date;
  destinations_count: number;
  topics: string[] | null;
}

function toTenant(r: TenantRow): Tenant {
  const t: Tenant = {
    id: r.id,
    destinations_count: r.destinations_count,
    topics: [...new Set(r.topics ?? [])].sort(),
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
  };
  if (r.metadata) t.metadata = r.metadata;
  return t;
}

export class TenantStore {
  private readonly db: Knex;
  constructor(db: Knex) {
    this.db = db;
  }

  private select(q: Knex | Knex.Transaction = this.db) {
    return q('tenants as t').select(
      't.id',
      't.metadata',
      't.created_at',
      't.updated_at',
      q.raw('(SELECT count(*) FROM destinations d WHERE d.tenant_id = t.id)::int AS destinations_count'),
      q.raw('(SELECT array_agg(DISTINCT x) FROM destinations d, unnest(d.topics) x WHERE d.tenant_id = t.id) AS topics'),
    );
  }

  /** Idempotent create; `created` tells whether this call made the row. Metadata, when given, replaces. */
  async upsert(id: string, metadata?: Record<string, string>): Promise<{ tenant: Tenant; created: boolean }> {
    return this.db.transaction(async (tx) => {
      const inserted = await tx('tenants')
        .insert({ id, metadata: metadata ? JSON.stringify(metadata) : null })
        .onConflict('id')
        .ignore()
        .returning('id');
      if (!inserted.length && metadata !== undefined) {
        await tx('tenants')
          .where({ id })
          .update({ metadata: JSON.stringify(metadata), updated_at: tx.fn.now() });
      }
      const row = (await this.select(tx).where('t.id', id).first()) as TenantRow;
      return { tenant: toTenant(row), created: inserted.length > 0 };
    });
  }

  async get(id: string): Promise<Tenant | null> {
    const row = (await this.select().where('t.id', id).first()) as TenantRow | undefined;
    return row ? toTenant(row) : null;
  }

  async exists(id: string): Promise<boolean> {
    return Boolean(await this.db('tenants').where({ id }).first('id'));
  }

  /** Tenants, cursor-paged; only those of `ids` when given. */
  async list(page: ListPage, ids?: readonly string[]): Promise<Page<Tenant>> {
    const q = this.select();
    if (ids?.length) q.whereIn('t.id', [...ids]);
    const res = await paginate<TenantRow>(this.db, q, {
      ...page,
      kind: 'ten',
      column: 't.created_at',
      idColumn: 't.id',
      orderBy: 'created_at',
    });
    return { models: res.models.map(toTenant), pagination: res.pagination };
  }

  /**
   * Deletes the tenant; its destinations go with it (ON DELETE CASCADE). Its events, deliveries,
   * attempts and idempotency keys are erased after, in the background (shared/src/db/erasure.ts).
   */
  async delete(id: string): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      if (!((await tx('tenants').where({ id }).delete()) > 0)) return false;
      await tx('tenant_erasures').insert({ tenant_id: id });
      return true;
    });
  }
}
