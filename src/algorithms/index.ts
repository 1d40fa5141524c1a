/** The registry of algorithms, by public name and by Lua dispatch code. */
import { calendarWindow } from './calendar-window.js';
import { concurrency } from './concurrency.js';
import { fixedWindow } from './fixed-window.js';
import { gcra } from './gcra.js';
import { slidingLog } from './sliding-log.js';
import { slidingWindow } from './sliding-window.js';
import { tokenBucket } from './token-bucket.js';
import type { Algorithm, AlgorithmName } from './types.js';

// biome-ignore lint/suspicious/noExplicitAny: each algorithm has its own state type; callers treat it as opaque.
export type AnyAlgorithm = Algorithm<any>;

export const ALGORITHMS: Readonly<Record<AlgorithmName, AnyAlgorithm>> = {
  'fixed-window': fixedWindow,
  'sliding-log': slidingLog,
  'sliding-window': slidingWindow,
  'token-bucket': tokenBucket,
  gcra,
  concurrency,
};

export const ALGORITHM_NAMES = Object.keys(ALGORITHMS) as AlgorithmName[];

/** Every algorithm a store runs: the public ones, and fixed-window by calendar period (a rule's `period`). */
export const ALL_ALGORITHMS: readonly AnyAlgorithm[] = [
  ...ALGORITHM_NAMES.map((name) => ALGORITHMS[name]),
  calendarWindow,
];

export { calendarWindow };

/** The algorithms that limit a rate (every one but those holding slots, such as concurrency). */
export const RATE_ALGORITHM_NAMES = ALGORITHM_NAMES.filter((name) => ALGORITHMS[name].slots === undefined);

export type {
  Algorithm,
  AlgorithmName,
  AlgorithmParams,
  Evaluation,
  Periods,
  Settlement,
  SettleResult,
  SlotChange,
} from './types.js';
export { adjust, NEVER } from './types.js';
