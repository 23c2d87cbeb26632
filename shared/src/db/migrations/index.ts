import type { Knex } from 'knex';
import * as m001 from './001_initial.ts';

export interface Migration {
  name: string;
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

/** Applied in this order; never edit a migration that has shipped, add a new one. */
export const MIGRATIONS: Migration[] = [{ name: '001_initial', ...m001 }];
