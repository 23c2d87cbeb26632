// A run recorded under bench/results, by label: the bench tests read real results.
import { join } from 'node:path';
import { type RunResult, readRunResult } from '../../bench/lib/report.ts';
import { ROOT } from '@switchyard/shared/testing/index.ts';

export const recorded = (label: string): RunResult => readRunResult(join(ROOT, 'bench/results', `${label}.json`));
