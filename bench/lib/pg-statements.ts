// Where Postgres spends its time during a phase (`npm run bench -- --pg-statements`): the
// pg_stat_statements view, reset when the measurement window opens and read when it closes, so the
// table holds the pipeline's statements under load and nothing of set-up or drain. The server loads
// the module when started with PG_STAT_STATEMENTS=1 (infra/postgres/pg.sh).
import type pg from 'pg';
import { fmtInt, round } from './stats.ts';

/** A comment the runner ends its own queries with, so they are left out of the pipeline's statements. */
export const RUNNER_TAG = '/* bench-runner */';

export interface PgStatement {
  calls: number;
  /** Execution time summed over the calls, ms: time inside the server, waits included, not only CPU. */
  totalMs: number;
  /** Planning time summed over the calls, ms (pg_stat_statements.track_planning; absent in older runs). */
  planMs?: number;
  rows: number;
  /** Whitespace collapsed, lists of parameters squashed (`IN (...)`), cut at 200 characters. */
  query: string;
}

export interface PgStatements {
  windowS: number;
  /** Every statement of the database in the window (not only the top ones). */
  totalCalls: number;
  totalMs: number;
  planMs?: number;
  top: PgStatement[];
}

/**
 * One text for one statement whatever the length of its lists: knex writes `IN ($1, $2)` and
 * `IN ($1, $2, $3)`, and multi-row VALUES, as different statements, which pg_stat_statements (before
 * Postgres 18) counts apart.
 */
export function squash(query: string): string {
  return query
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/\(\$\d+(?:, \$\d+)*\)/g, '(...)')
    .replace(/\(\.\.\.\)(?:, \(\.\.\.\))+/g, '(...)');
}

/** Installs the extension in this database (once) and empties the view, for every database. */
export async function resetStatements(db: pg.Client): Promise<void> {
  await db.query(`CREATE EXTENSION IF NOT EXISTS pg_stat_statements ${RUNNER_TAG}`);
  await db.query(`SELECT pg_stat_statements_reset() ${RUNNER_TAG}`);
}

/** This database's statements since the reset, the most expensive first; the runner's own left out. */
export async function readStatements(db: pg.Client, windowS: number, topN = 12): Promise<PgStatements> {
  const { rows } = await db.query<{ calls: string; total_ms: number; plan_ms: number; rows: string; query: string }>(
    `SELECT calls::text, total_exec_time AS total_ms, total_plan_time AS plan_ms, rows::text, query FROM pg_stat_statements
      WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query NOT LIKE $1
      ORDER BY total_exec_time DESC ${RUNNER_TAG}`,
    [`%${RUNNER_TAG}%`],
  );
  const byText = new Map<string, PgStatement>();
  for (const r of rows) {
    const query = squash(r.query).slice(0, 200);
    const q = byText.get(query) ?? { calls: 0, totalMs: 0, planMs: 0, rows: 0, query };
    q.calls += Number(r.calls);
    q.totalMs += r.total_ms;
    q.planMs = (q.planMs ?? 0) + r.plan_ms;
    q.rows += Number(r.rows);
    byText.set(query, q);
  }
  const all = [...byText.values()]
    .map((q) => ({ ...q, totalMs: round(q.totalMs, 3), planMs: round(q.planMs ?? 0, 3) }))
    .sort((a, b) => b.totalMs - a.totalMs);
  return {
    windowS,
    totalCalls: all.reduce((s, r) => s + r.calls, 0),
    totalMs: round(
      all.reduce((s, r) => s + r.totalMs, 0),
      3,
    ),
    planMs: round(
      all.reduce((s, r) => s + (r.planMs ?? 0), 0),
      3,
    ),
    top: all.slice(0, topN),
  };
}

/**
 * Markdown for one phase: each statement's share of the execution time, per second and per row, and
 * its planning time per call where the run recorded it.
 */
export function statementsMarkdown(s: PgStatements): string {
  const L: string[] = [];
  const planned = s.planMs !== undefined;
  const planning = planned ? `, ${round((s.planMs ?? 0) / 1000 / s.windowS, 3)} s of planning` : '';
  L.push(
    `${fmtInt(s.totalCalls / s.windowS)} statements/s, ${round(s.totalMs / 1000 / s.windowS, 2)} s of execution${planning} per second of the window (waits included, so not only CPU).`,
  );
  L.push('');
  L.push(`| share of time | calls/s | ms per call |${planned ? ' plan ms per call |' : ''} rows/s | µs per row | statement |`);
  L.push(`|---:|---:|---:|${planned ? '---:|' : ''}---:|---:|---|`);
  for (const q of s.top) {
    const share = s.totalMs ? (100 * q.totalMs) / s.totalMs : 0;
    const perRow = q.rows ? `${fmtInt((1000 * q.totalMs) / q.rows)}` : '';
    L.push(
      `| ${share.toFixed(1)}% | ${fmtInt(q.calls / s.windowS)} | ${round(q.totalMs / Math.max(1, q.calls), 3)} |${planned ? ` ${round((q.planMs ?? 0) / Math.max(1, q.calls), 3)} |` : ''} ${fmtInt(q.rows / s.windowS)} | ${perRow} | \`${q.query.replace(/\|/g, '\\|').replace(/`/g, "'")}\` |`,
    );
  }
  return L.join('\n');
}
