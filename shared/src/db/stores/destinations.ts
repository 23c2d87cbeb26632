import type { Knex } from 'knex';
import { ConfigError } from '../../config/index.ts';
import type { Cipher } from '../../crypto.ts';
import {
  type Destination,
  type DestinationRoute,
  type DestinationSnapshot,
  type DestinationType,
  destinationKey,
  type JsonObject,
  type RateLimit,
} from '../../model/index.ts';
import { type Statement, statement } from '../statement.ts';

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
  cancel_epoch?: number;
  rate_limit?: RateLimit | null;
  ordered?: boolean;
  created_at: Date;
  updated_at: Date;
}

/** A destination as the router sees it: what selects it, and the snapshot its deliveries carry. */
export type RoutableDestination = DestinationRoute & { snapshot: DestinationSnapshot };

function toRoute(r: DestinationRow): DestinationRoute {
  return { id: r.id, topics: r.topics, filter: r.filter, disabled_at: r.disabled_at ? r.disabled_at.toISOString() : null };
}

/** The columns a DestinationRoute is made of, and a RoutableDestination (besides tenant_id). */
const ROUTE_COLUMNS = ['id', 'topics', 'filter', 'disabled_at'];
const ROUTABLE_COLUMNS = [
  ...ROUTE_COLUMNS,
  'type',
  'config',
  'credentials',
  'delivery_metadata',
  'cancel_epoch',
  'rate_limit',
  'ordered',
  'created_at',
];

/**
 * Tenants of a list that exist, each with the columns named of its destinations in creation order;
 * a tenant without destinations comes back as one row of nulls. The list is one array parameter, so
 * the text is the same for every batch and the statement is prepared once (db/statement.ts).
 */
function ofExistingTenantsStatement(name: string, columns: string[]) {
  return statement(
    name,
    `SELECT t.id AS tenant_id, ${columns.map((c) => `d.${c}`).join(', ')}
     FROM tenants t LEFT JOIN destinations d ON d.tenant_id = t.id
     WHERE t.id = ANY(?::text[])
     ORDER BY d.created_at, d.id`,
  );
}
const ROUTES_OF = ofExistingTenantsStatement('routes_of_tenants', ROUTE_COLUMNS);
const ROUTABLES_OF = ofExistingTenantsStatement('routables_of_tenants', ROUTABLE_COLUMNS);

/** Secrets go into the snapshot sealed as stored: only a sender opens them. */
function toRoutable(r: DestinationRow): RoutableDestination {
  return {
    ...toRoute(r),
    snapshot: {
      id: r.id,
      tenant_id: r.tenant_id,
      type: r.type,
      config: r.config ?? {},
      credentials: r.credentials,
      delivery_metadata: r.delivery_metadata,
      // Only once something was canceled: the records of every other destination stay as they were.
      ...(r.cancel_epoch ? { cancel_epoch: r.cancel_epoch } : {}),
      ...(r.rate_limit ? { rate_limit: r.rate_limit } : {}),
      ...(r.ordered ? { ordered: true } : {}),
      created_at: r.created_at.toISOString(),
    },
  };
}

export type NewDestination = Omit<Destination, 'created_at' | 'updated_at' | 'disabled_at'> & { disabled_at?: string | null };
export type DestinationChanges = Partial<
  Pick<
    Destination,
    'topics' | 'config' | 'credentials' | 'delivery_metadata' | 'metadata' | 'filter' | 'disabled_at' | 'rate_limit' | 'ordered'
  >
>;

/** How many opened secrets a store keeps by ciphertext (see openSnapshot): about 3 MB of webhook secrets. */
export const OPENED_MAX = 10_000;
const NOTHING: Readonly<Record<string, never>> = Object.freeze({});

/** Destinations in Postgres; credentials and delivery_metadata are encrypted here and nowhere else. */
export class DestinationStore {
  private readonly db: Knex;
  private readonly cipher: Cipher;
  /** Opened secrets by their ciphertext, oldest first. */
  private readonly opened = new Map<string, Readonly<Record<string, unknown>>>();
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
      rate_limit: r.rate_limit ?? null,
      ordered: r.ordered ?? false,
      created_at: r.created_at.toISOString(),
      updated_at: r.updated_at.toISOString(),
    };
  }

  /**
   * A delivery's secrets, opened. Deliveries carry their destination's ciphertext as stored (the
   * router passes it on), so what is opened is kept by ciphertext: a sender decrypts a destination's
   * secrets once per change of them, not once per delivery. Frozen, since deliveries share it.
   */
  openSnapshot(s: DestinationSnapshot): {
    credentials: Readonly<Record<string, unknown>>;
    delivery_metadata: Readonly<Record<string, string>>;
  } {
    return {
      credentials: this.openShared(s.credentials),
      delivery_metadata: this.openShared(s.delivery_metadata) as Readonly<Record<string, string>>,
    };
  }

  private openShared(sealed: string | null): Readonly<Record<string, unknown>> {
    if (!sealed) return NOTHING;
    let v = this.opened.get(sealed);
    if (v === undefined) {
      v = Object.freeze(this.open<Record<string, unknown>>(sealed) ?? {});
      if (this.opened.size >= OPENED_MAX) this.opened.delete(this.opened.keys().next().value as string);
      this.opened.set(sealed, v);
    }
    return v;
  }

  async create(d: NewDestination): Promise<Destination> {
    const [row] = await this.db('destinations').insert(this.rowOf(d)).returning('*');
    return this.toDestination(row as DestinationRow);
  }

  /**
   * Creates `d` unless its tenant has `max` destinations already, one of its id, or is gone: the
   * tenant's row is locked meanwhile, so concurrent creates neither pass the limit together nor
   * collide on an id (the loser is told, not answered with the unique violation).
   */
  async createWithin(d: NewDestination, max: number): Promise<Destination | 'limit' | 'exists' | 'no-tenant'> {
    return this.db.transaction(async (trx) => {
      if (!(await trx('tenants').where({ id: d.tenant_id }).forUpdate().first('id'))) return 'no-tenant';
      const r = (await trx('destinations').where({ tenant_id: d.tenant_id }).count<{ n: number }[]>({ n: '*' }))[0];
      if (Number(r?.n ?? 0) >= max) return 'limit';
      if (await trx('destinations').where({ tenant_id: d.tenant_id, id: d.id }).first('id')) return 'exists';
      const [row] = await trx('destinations').insert(this.rowOf(d)).returning('*');
      return this.toDestination(row as DestinationRow);
    });
  }

  private rowOf(d: NewDestination) {
    return {
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
      rate_limit: d.rate_limit ? JSON.stringify(d.rate_limit) : null,
      ordered: d.ordered ?? false,
    };
  }

  async list(tenantId: string, opts: { type?: string[]; topics?: string[] } = {}): Promise<Destination[]> {
    const q = this.db('destinations')
      .where({ tenant_id: tenantId })
      .orderBy([{ column: 'created_at' }, { column: 'id' }]);
    if (opts.type?.length) q.whereIn('type', opts.type);
    if (opts.topics?.length) q.where((w) => w.whereRaw('topics && ?::text[]', [opts.topics as string[]]).orWhereRaw("'*' = ANY(topics)"));
    return ((await q) as DestinationRow[]).map((r) => this.toDestination(r));
  }

  /**
   * The router's per-batch lookup: which of these tenants exist and, for each, what routing needs
   * of its destinations plus the snapshot its deliveries carry. One query; secrets are passed on
   * sealed as stored (only a sender opens them), so nothing is decrypted or re-encrypted here.
   */
  routableOf(tenantIds: string[]): Promise<Map<string, RoutableDestination[]>> {
    return this.ofExistingTenants(tenantIds, ROUTABLES_OF, toRoutable);
  }

  /** One destination as its deliveries carry it (a manual retry), secrets sealed as stored. */
  async routable(tenantId: string, id: string): Promise<RoutableDestination | null> {
    const row = (await this.db('destinations')
      .where({ tenant_id: tenantId, id })
      .first(['tenant_id', ...ROUTABLE_COLUMNS])) as DestinationRow | undefined;
    return row ? toRoutable(row) : null;
  }

  /**
   * The gateway's publish path: which of these tenants exist and which destinations an event of
   * theirs matches. One query, routing columns only.
   */
  routesOf(tenantIds: string[]): Promise<Map<string, DestinationRoute[]>> {
    return this.ofExistingTenants(tenantIds, ROUTES_OF, toRoute);
  }

  /**
   * Every tenant of `tenantIds` that exists, each with its destinations (the columns named, in
   * creation order, possibly none); a tenant that does not exist is not in the map.
   */
  private async ofExistingTenants<T>(tenantIds: string[], query: Statement, map: (r: DestinationRow) => T): Promise<Map<string, T[]>> {
    if (!tenantIds.length) return new Map();
    const { rows } = await query.run<{ rows: DestinationRow[] }>(this.db, [tenantIds]);
    const out = new Map<string, T[]>();
    for (const r of rows) {
      let list = out.get(r.tenant_id);
      if (!list) {
        list = [];
        out.set(r.tenant_id, list);
      }
      // A tenant without destinations comes back as one row of nulls.
      if (r.id !== null) list.push(map(r));
    }
    return out;
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
    if (changes.rate_limit !== undefined) patch.rate_limit = changes.rate_limit ? JSON.stringify(changes.rate_limit) : null;
    if (changes.ordered !== undefined) patch.ordered = changes.ordered;
    const [row] = await this.db('destinations').where({ tenant_id: tenantId, id }).update(patch).returning('*');
    return row ? this.toDestination(row as DestinationRow) : null;
  }

  /** Cancels every delivery made so far (their epoch is now below the destination's); null when it is gone. */
  async cancelPending(tenantId: string, id: string): Promise<number | null> {
    const [row] = await this.db('destinations')
      .where({ tenant_id: tenantId, id })
      .update({ cancel_epoch: this.db.raw('cancel_epoch + 1'), updated_at: this.db.fn.now() })
      .returning('cancel_epoch');
    return row ? Number((row as { cancel_epoch: number }).cancel_epoch) : null;
  }

  /**
   * Deletes the destination with its health (consecutive failures, last alert): one created again
   * under its id starts with none, so its own failures raise alerts and disable it as documented.
   */
  async delete(tenantId: string, id: string): Promise<boolean> {
    return this.db.transaction(async (trx) => {
      await trx('destination_health').where({ tenant_id: tenantId, destination_id: id }).delete();
      return (await trx('destinations').where({ tenant_id: tenantId, id }).delete()) > 0;
    });
  }

  /**
   * Which of these destinations still exist and are enabled, as `destinationKey`s: a sender closes the
   * clients of the others. Each is matched with its tenant: another tenant's destination of the same
   * id keeps none open. One statement, the pairs as two arrays.
   */
  async deliverableOf(destinations: ReadonlyArray<{ tenant_id: string; id: string }>): Promise<Set<string>> {
    const out = new Set<string>();
    if (!destinations.length) return out;
    const rows = (await this.db('destinations')
      .whereRaw('(tenant_id, id) IN (SELECT x.tenant_id, x.id FROM unnest(?::text[], ?::text[]) AS x(tenant_id, id))', [
        destinations.map((d) => d.tenant_id),
        destinations.map((d) => d.id),
      ])
      .whereNull('disabled_at')
      .select('tenant_id', 'id')) as Array<{ tenant_id: string; id: string }>;
    for (const r of rows) out.add(destinationKey(r.tenant_id, r.id));
    return out;
  }
}

/**
 * Refuses keys that do not open every stored secret: for each key that wrote one (a ciphertext names
 * its key), one of its secrets is opened with AES_ENCRYPTION_SECRET (and AES_ENCRYPTION_SECRET_PREVIOUS).
 * Run at every start, so a wrong or missing key is one line then, not a server error on every read of
 * the destinations it wrote and their deliveries failing until the key is fixed. One pass over the
 * two columns, grouped by key: a start opens one secret of each key, not every row.
 */
export async function checkStoredKey(db: Knex, cipher: Cipher): Promise<void> {
  const keyOf = (column: string) => db.raw(`split_part(${column}, '.', 2)`);
  const sealed = (column: 'credentials' | 'delivery_metadata') =>
    db('destinations')
      .whereNotNull(column)
      .select({ key: keyOf(column), sealed: column });
  const byKey: Array<{ key: string; sealed: string }> = await db
    .from(sealed('credentials').unionAll(sealed('delivery_metadata'), true).as('s'))
    .groupBy('key')
    .select('key', db.raw('min(sealed) AS sealed'));
  const unread = byKey.filter((k) => {
    try {
      cipher.decrypt(k.sealed);
      return false;
    } catch {
      return true;
    }
  });
  if (unread.length === 0) return;
  if (unread.length === byKey.length) {
    throw new ConfigError([
      'AES_ENCRYPTION_SECRET: the stored destination secrets were written with another key; set the key that wrote them ' +
        '(or set it as AES_ENCRYPTION_SECRET_PREVIOUS and run npm run rotate-encryption-key: docs/operations.md, "Rotating the encryption key")',
    ]);
  }
  const keys = unread.map((k) => k.key);
  const inKeys = (column: string) => [`split_part(${column}, '.', 2) IN (${keys.map(() => '?').join(', ')})`, keys] as const;
  const rows: Array<{ tenant_id: string; id: string }> = await db('destinations')
    .whereRaw(...inKeys('credentials'))
    .orWhereRaw(...inKeys('delivery_metadata'))
    .orderBy(['tenant_id', 'id'])
    .select('tenant_id', 'id');
  const [first] = rows as [(typeof rows)[number]];
  throw new ConfigError([
    `AES_ENCRYPTION_SECRET: ${rows.length} destination${rows.length === 1 ? "'s secrets were" : "s' secrets were"} written with a key that is ` +
      `neither it nor AES_ENCRYPTION_SECRET_PREVIOUS (${first.tenant_id}/${first.id} first); set that key as ` +
      'AES_ENCRYPTION_SECRET_PREVIOUS and run npm run rotate-encryption-key (docs/operations.md, "Rotating the encryption key")',
  ]);
}
