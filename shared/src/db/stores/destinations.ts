import type { Knex } from 'knex';
import type { Cipher } from '../../crypto.ts';
import type { Destination, DestinationRoute, DestinationSnapshot, DestinationType, JsonObject } from '../../model/index.ts';

interface DestinationRow {
  tenant_id: string;
  id: string;
  type: DestinationType;
  topics: string[];
  config: Record<string, unknown>;
  credentials: string | null;
  delivery_metadata: string | null;
  metadata: Record<string, string> | null;
  filter: JsonObject | null;
  disabled_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export type NewDestination = Omit<Destination, 'created_at' | 'updated_at' | 'disabled_at'> & { disabled_at?: string | null };
export type DestinationChanges = Partial<
  Pick<Destination, 'topics' | 'config' | 'credentials' | 'delivery_metadata' | 'metadata' | 'filter' | 'disabled_at'>
>;

/** Destinations in Postgres; credentials and delivery_metadata are encrypted here and nowhere else. */
export class DestinationStore {
  private readonly db: Knex;
  private readonly cipher: Cipher;
  constructor(db: Knex, cipher: Cipher) {
    this.db = db;
    this.cipher = cipher;
  }

  private seal(v: Record<string, unknown> | null | undefined): string | null {
    return v && Object.keys(v).length ? this.cipher.encrypt(JSON.stringify(v)) : null;
  }

  private open<T>(v: string | null): T | null {
    return v ? (JSON.parse(this.cipher.decrypt(v)) as T) : null;
  }

  private toDestination(r: DestinationRow): Destination {
    return {
      id: r.id,
      tenant_id: r.tenant_id,
      type: r.type,
      topics: r.topics,
      config: r.config ?? {},
      credentials: this.open<Record<string, unknown>>(r.credentials) ?? {},
      delivery_metadata: this.open<Record<string, string>>(r.delivery_metadata),
      metadata: r.metadata,
      filter: r.filter,
      disabled_at: r.disabled_at ? r.disabled_at.toISOString() : null,
      created_at: r.created_at.toISOString(),
      updated_at: r.updated_at.toISOString(),
    };
  }

  /** The form that travels in delivery records: secrets stay sealed. */
  snapshot(d: Destination): DestinationSnapshot {
    return {
      id: d.id,
      tenant_id: d.tenant_id,
      type: d.type,
      config: d.config,
      credentials: this.seal(d.credentials),
      delivery_metadata: this.seal(d.delivery_metadata),
    };
  }

  openSnapshot(s: DestinationSnapshot): { credentials: Record<string, unknown>; delivery_metadata: Record<string, string> } {
    return {
      credentials: this.open<Record<string, unknown>>(s.credentials) ?? {},
      delivery_metadata: this.open<Record<string, string>>(s.delivery_metadata) ?? {},
    };
  }

  async create(d: NewDestination): Promise<Destination> {
    const [row] = await this.db('destinations')
      .insert({
        tenant_id: d.tenant_id,
        id: d.id,
        type: d.type,
        topics: d.topics,
        config: JSON.stringify(d.config),
        credentials: this.seal(d.credentials),
        delivery_metadata: this.seal(d.delivery_metadata),
        metadata: d.metadata ? JSON.stringify(d.metadata) : null,
        filter: d.filter ? JSON.stringify(d.filter) : null,
        disabled_at: d.disabled_at ?? null,
      })
      .returning('*');
    return this.toDestination(row as DestinationRow);
  }

  async list(tenantId: string, opts: { type?: string[]; topics?: string[] } = {}): Promise<Destination[]> {
    const q = this.db('destinations')
      .where({ tenant_id: tenantId })
      .orderBy([{ column: 'created_at' }, { column: 'id' }]);
    if (opts.type?.length) q.whereIn('type', opts.type);
    if (opts.topics?.length) q.where((w) => w.whereRaw('topics && ?::text[]', [opts.topics as string[]]).orWhereRaw("'*' = ANY(topics)"));
    return ((await q) as DestinationRow[]).map((r) => this.toDestination(r));
  }

  /** Destinations of several tenants in one query (the router's per-batch lookup). */
  listForTenants(tenantIds: string[]): Promise<Map<string, Destination[]>> {
    return this.byTenant(tenantIds, ['*'], (r) => this.toDestination(r));
  }

  /**
   * What routing needs of the destinations of several tenants, in one query and without opening
   * any secret (the gateway's publish path: which destinations an event matches).
   */
  routesForTenants(tenantIds: string[]): Promise<Map<string, DestinationRoute[]>> {
    return this.byTenant(tenantIds, ['tenant_id', 'id', 'topics', 'filter', 'disabled_at'], (r) => ({
      id: r.id,
      topics: r.topics,
      filter: r.filter,
      disabled_at: r.disabled_at ? r.disabled_at.toISOString() : null,
    }));
  }

  /** The destinations of several tenants (the columns named), in creation order, by tenant. */
  private async byTenant<T>(tenantIds: string[], columns: string[], map: (r: DestinationRow) => T): Promise<Map<string, T[]>> {
    if (!tenantIds.length) return new Map();
    const rows = (await this.db('destinations')
      .whereIn('tenant_id', tenantIds)
      .orderBy([{ column: 'created_at' }, { column: 'id' }])
      .select(columns)) as DestinationRow[];
    return new Map([...Map.groupBy(rows, (r) => r.tenant_id)].map(([tenant, list]) => [tenant, list.map(map)]));
  }

  async count(tenantId: string): Promise<number> {
    const r = (await this.db('destinations').where({ tenant_id: tenantId }).count<{ n: number }[]>({ n: '*' }))[0];
    return Number(r?.n ?? 0);
  }

  async get(tenantId: string, id: string): Promise<Destination | null> {
    const row = (await this.db('destinations').where({ tenant_id: tenantId, id }).first()) as DestinationRow | undefined;
    return row ? this.toDestination(row) : null;
  }

  async update(tenantId: string, id: string, changes: DestinationChanges): Promise<Destination | null> {
    const patch: Record<string, unknown> = { updated_at: this.db.fn.now() };
    if (changes.topics !== undefined) patch.topics = changes.topics;
    if (changes.config !== undefined) patch.config = JSON.stringify(changes.config);
    if (changes.credentials !== undefined) patch.credentials = this.seal(changes.credentials);
    if (changes.delivery_metadata !== undefined) patch.delivery_metadata = this.seal(changes.delivery_metadata);
    if (changes.metadata !== undefined) patch.metadata = changes.metadata ? JSON.stringify(changes.metadata) : null;
    if (changes.filter !== undefined) patch.filter = changes.filter ? JSON.stringify(changes.filter) : null;
    if (changes.disabled_at !== undefined) patch.disabled_at = changes.disabled_at;
    const [row] = await this.db('destinations').where({ tenant_id: tenantId, id }).update(patch).returning('*');
    return row ? this.toDestination(row as DestinationRow) : null;
  }

  async delete(tenantId: string, id: string): Promise<boolean> {
    return (await this.db('destinations').where({ tenant_id: tenantId, id }).delete()) > 0;
  }
}
