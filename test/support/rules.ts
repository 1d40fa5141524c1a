/**
 * One rule of each algorithm, in one limiter: limit 3, and a window long enough that nothing
 * refills or rolls over while a test runs, so counts are exact (3 checks allowed, the 4th denied).
 */
import type { RuleOptions } from '../../src/index.js';

export const FIVE_ALGORITHM_RULES: readonly RuleOptions[] = [
  { name: 'fw', algorithm: 'fixed-window', limit: 3, window: '1d' },
  { name: 'sw', algorithm: 'sliding-window', limit: 3, window: '1d' },
  { name: 'sl', algorithm: 'sliding-log', limit: 3, window: '1d' },
  { name: 'tb', algorithm: 'token-bucket', limit: 3, window: '1d' },
  { name: 'gc', algorithm: 'gcra', limit: 3, window: '1d' },
];
