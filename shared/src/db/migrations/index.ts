import type { Knex } from 'knex';
import * as m001 from './001_initial.ts';
import * as m002 from './002_pipeline.ts';
import * as m003 from './003_attempt_event_partition.ts';
import * as m004 from './004_tenant_destination_statistics.ts';
import * as m005 from './005_event_payload_bytes.ts';
import * as m006 from './006_operations.ts';

export interface Migration {
  name: string;
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

/** Applied in this order; never edit a migration that has shipped, add a new one. */
export const MIGRATIONS: Migration[] = [
  { name: '001_initial', ...m001 },
  { name: '002_pipeline', ...m002 },
  { name: '003_attempt_event_partition', ...m003 },
  { name: '004_tenant_destination_statistics', ...m004 },
  { name: '005_event_payload_bytes', ...m005 },
  { name: '006_operations', ...m006 },
];
