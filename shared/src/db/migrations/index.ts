import type { Knex } from 'knex';
import * as m001 from './001_initial.ts';
import * as m002 from './002_pipeline.ts';
import * as m003 from './003_attempt_event_partition.ts';
import * as m004 from './004_tenant_destination_statistics.ts';
import * as m005 from './005_event_payload_bytes.ts';
import * as m006 from './006_canceled_status.ts';
import * as m007 from './007_tenant_erasures.ts';
import * as m008 from './008_destination_cancel_epoch.ts';
import * as m009 from './009_sender_presence.ts';
import * as m010 from './010_operations.ts';
import * as m011 from './011_destination_rate_limit.ts';
import * as m012 from './012_scheduled_events.ts';
import * as m013 from './013_destination_ordered.ts';
import * as m014 from './014_ordered_spill.ts';
import * as m015 from './015_ordered_attempts.ts';
import * as m016 from './016_scheduled_events_index.ts';
import * as m017 from './017_ordered_blocks_waiting.ts';
import * as m018 from './018_ordered_spill_arrival.ts';

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
  { name: '006_canceled_status', ...m006 },
  { name: '007_tenant_erasures', ...m007 },
  { name: '008_destination_cancel_epoch', ...m008 },
  { name: '009_sender_presence', ...m009 },
  { name: '010_operations', ...m010 },
  { name: '011_destination_rate_limit', ...m011 },
  { name: '012_scheduled_events', ...m012 },
  { name: '013_destination_ordered', ...m013 },
  { name: '014_ordered_spill', ...m014 },
  { name: '015_ordered_attempts', ...m015 },
  { name: '016_scheduled_events_index', ...m016 },
  { name: '017_ordered_blocks_waiting', ...m017 },
  { name: '018_ordered_spill_arrival', ...m018 },
];
