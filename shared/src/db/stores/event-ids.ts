import type { Knex } from 'knex';
import { statement } from '../statement.ts';

export type Reservation = 'new' | 'duplicate' | 'in_flight';

const RESERVE = statement(
  'reserve_event_ids',
  `WITH input AS (
    SELECT * FROM unnest(?::text[], ?::text[]) WITH ORDINALITY AS x(tenant_id, id, i)
  ), inserted AS (
    INSERT INTO event_ids (tenant_id, id)
    SELECT DISTINCT ON (tenant_id, id) tenant_id, id FROM input ORDER BY tenant_id, id, i
    ON CONFLICT (tenant_id, id) DO UPDATE SET reserved_at = now()
      -- take over a reservation abandoned by a dead publisher
      WHERE event_ids.state = 'pending' AND event_ids.claim_offset IS NULL
        AND event_ids.reserved_at < now() - make_interval(secs => ?)
    RETURNING tenant_id, id
  ), first AS (
    SELECT DISTINCT ON (tenant_id, id) i FROM input ORDER BY tenant_id, id, i
  )
  SELECT input.i,
    CASE
      WHEN inserted.id IS NOT NULL AND input.i IN (SELECT i FROM first) THEN 'new'
      WHEN e.state = 'accepted' OR e.claim_offset IS NOT NULL THEN 'duplicate'
      ELSE 'in_flight'
    END AS outcome
  FROM input
  LEFT JOIN inserted USING (tenant_id, id)
  LEFT JOIN event_ids e ON e.tenant_id = input.tenant_id AND e.id = input.id
  ORDER BY input.i`,
);

const ACCEPT = statement(
  'accept_event_ids',
  `UPDATE event_ids e SET state = 'accepted' FROM unnest(?::text[], ?::text[]) AS x(tenant_id, id)
  WHERE e.tenant_id = x.tenant_id AND e.id = x.id`,
);

const RELEASE = statement(
  'release_event_ids',
  `DELETE FROM event_ids e USING unnest(?::text[], ?::text[]) AS x(tenant_id, id)
  WHERE e.tenant_id = x.tenant_id AND e.id = x.id AND e.state = 'pending' AND e.claim_offset IS NULL`,
);

const CLAIM = statement(
  'claim_event_ids',
  `WITH input AS (
    SELECT * FROM unnest(?::text[], ?::text[], ?::int[], ?::bigint[]) WITH ORDINALITY AS x(tenant_id, id, p, o, i)
  ), first AS (
    SELECT DISTINCT ON (tenant_id, id) * FROM input ORDER BY tenant_id, id, i
  ), claimed AS (
    INSERT INTO event_ids AS e (tenant_id, id, state, claim_partition, claim_offset)
    SELECT tenant_id, id, 'accepted', p, o FROM first
    ON CONFLICT (tenant_id, id) DO UPDATE SET state = 'accepted', claim_partition = EXCLUDED.claim_partition, claim_offset = EXCLUDED.claim_offset
      WHERE e.claim_offset IS NULL
         OR (e.claim_partition = EXCLUDED.claim_partition AND e.claim_offset = EXCLUDED.claim_offset)
    RETURNING tenant_id, id
  )
  SELECT first.i FROM first JOIN claimed USING (tenant_id, id)`,
);

/**
 * Durable idempotency of event ids. Two checks, both batched (one statement per batch):
 * - the gateway reserves caller-supplied ids before producing, so a repeat of an accepted event is
 *   answered `duplicate` and a repeat racing its original `in_flight`;
 * - the router claims each event for exactly one Kafka record, so a repeat that still reached the
 *   events topic (a publisher that died between produce and acknowledgement) is never routed twice,
 *   while a redelivery of the claiming record itself (after a router crash) is routed again.
 */
export class EventIdStore {
  private readonly db: Knex;
  /** A reservation still pending after this long is treated as abandoned by a dead publisher. */
  private readonly staleMs: number;

  constructor(db: Knex, staleMs = 30_000) {
    this.db = db;
    this.staleMs = staleMs;
  }

  async reserve(keys: Array<{ tenant_id: string; id: string }>): Promise<Reservation[]> {
    if (!keys.length) return [];
    const { rows } = await RESERVE.run<{ rows: Array<{ i: number; outcome: Reservation }> }>(this.db, [
      keys.map((k) => k.tenant_id),
      keys.map((k) => k.id),
      this.staleMs / 1000,
    ]);
    return rows.map((r) => r.outcome);
  }

  /** Marks reservations accepted once Kafka acknowledged their events. */
  async accept(keys: Array<{ tenant_id: string; id: string }>): Promise<void> {
    if (!keys.length) return;
    await ACCEPT.run(this.db, [keys.map((k) => k.tenant_id), keys.map((k) => k.id)]);
  }

  /** Gives up reservations whose publish failed, so the caller may try again at once. */
  async release(keys: Array<{ tenant_id: string; id: string }>): Promise<void> {
    if (!keys.length) return;
    await RELEASE.run(this.db, [keys.map((k) => k.tenant_id), keys.map((k) => k.id)]);
  }

  /**
   * Claims events for the records carrying them. Returns the positions (into `claims`) that may be
   * routed: new claims, and records that already hold their claim (redelivered after a crash).
   */
  async claim(claims: Array<{ tenant_id: string; id: string; partition: number; offset: string }>): Promise<Set<number>> {
    if (!claims.length) return new Set();
    const { rows } = await CLAIM.run<{ rows: Array<{ i: number }> }>(this.db, [
      claims.map((c) => c.tenant_id),
      claims.map((c) => c.id),
      claims.map((c) => c.partition),
      claims.map((c) => c.offset),
    ]);
    return new Set(rows.map((r) => Number(r.i) - 1));
  }
}
