// A recorded benchmark run, by file name (what the run shows), from test/fixtures/bench: the bench tests read real results
// (copies of runs once kept under bench/results, written without indentation).
import { join } from 'node:path';
import { type RunResult, readRunResult } from '../../bench/lib/report.ts';
import { ROOT } from '@switchyard/shared/testing/index.ts';

export const recorded = (label: string): RunResult => readRunResult(join(ROOT, 'test/fixtures/bench', `${label}.json`));
