import type { Knex } from 'knex';

// `canceled`: a delivery whose destination was deleted or disabled before its attempt is recorded
// as one final attempt with this status, and its delivery row takes it. The checks are
// replaced on the partitioned parents, which carries them to every partition.
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE attempts DROP CONSTRAINT IF EXISTS attempts_status_check;
    ALTER TABLE attempts ADD CONSTRAINT attempts_status_check CHECK (status IN ('success', 'failed', 'canceled'));
    ALTER TABLE deliveries DROP CONSTRAINT IF EXISTS deliveries_status_check;
    ALTER TABLE deliveries ADD CONSTRAINT deliveries_status_check CHECK (status IN ('pending', 'success', 'failed', 'skipped', 'canceled'));
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE attempts DROP CONSTRAINT IF EXISTS attempts_status_check;
    ALTER TABLE attempts ADD CONSTRAINT attempts_status_check CHECK (status IN ('success', 'failed')) NOT VALID;
    ALTER TABLE deliveries DROP CONSTRAINT IF EXISTS deliveries_status_check;
    ALTER TABLE deliveries ADD CONSTRAINT deliveries_status_check CHECK (status IN ('pending', 'success', 'failed', 'skipped')) NOT VALID;
  `);
}
