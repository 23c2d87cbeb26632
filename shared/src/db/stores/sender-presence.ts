import type { Knex } from 'knex';

/**
 * Which destination types have a sender running: each sender marks its types every 30 s
 * (services/sender/src/service.ts), and the gateway reads the types marked recently to say why a
 * delivery is pending (services/gateway/src/pending-reason.ts).
 */
export class SenderPresenceStore {
  private readonly db: Knex;
  constructor(db: Knex) {
    this.db = db;
  }

  /** Marks these types as seen now. */
  async mark(types: readonly string[]): Promise<void> {
    await this.db('sender_presence')
      .insert(types.map((type) => ({ type, seen_at: this.db.fn.now() })))
      .onConflict('type')
      .merge(['seen_at']);
  }

  /** The types marked since `since`. */
  async seenSince(since: Date): Promise<Set<string>> {
    const rows = (await this.db('sender_presence').where('seen_at', '>', since)) as { type: string }[];
    return new Set(rows.map((r) => r.type));
  }
}
