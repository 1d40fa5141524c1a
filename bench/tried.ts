/**
 * What was tried to make a check faster, and what each attempt gained: the maintained list that
 * BENCHMARKS.md prints (issue 24 asks the report to say it). One entry per change, kept or not;
 * its figures and method are in the dated docs/bench-log.md entry it links to. Add an entry with
 * every bench-log entry that measures a change.
 */

export interface Attempt {
  /** What changed, in a few words. */
  readonly change: string;
  /** Kept in the code, or tried and left out. */
  readonly kept: boolean;
  /** What it gained, as measured (or why it was left out). */
  readonly gain: string;
  /** The heading of the docs/bench-log.md entry that has the figures, as written there. */
  readonly logEntry: string;
}

const LONE_CHECK = '2026-12-02 04:20 UTC: a lone check on Redis, counted in bytes allocated';
const MERGES =
  '2026-12-02 01:45 UTC: what the store-limits, overload, secure-defaults and reshape merges cost';
const CONTRACT = '2026-12-02 03:15 UTC: the typed store contract';
const SCRIPT_WORK = "2026-12-02 05:55 UTC: a lone check's work inside Redis, counted in instructions";
const EXPRESS_PATH = '2026-12-02 08:40 UTC: the Express path, per request';
const LONE_CLIENT =
  "2026-12-02 09:10 UTC: a lone check's client side, counted in instructions; its call in one argument";
const RECEIVER =
  "2026-12-02 11:35 UTC: a check's store call through a receiver, and what a lone check costs next to each peer";
const SERVER_CLOCK =
  "2026-12-05 13:10 UTC: the server's clock stamped by the client (issue 41), and what topKeys costs the memory store";
const LONE_SCRIPT =
  "2026-12-02 08:45 UTC: a lone check's script without the batch's bookkeeping, and the peers' scripts, counted in instructions";

const TELEMETRY_COST =
  '2026-12-05 13:00 UTC: the cost per check of a meter, the heavy-hitter sketch and the fleet merge, counted';

export const ATTEMPTS: readonly Attempt[] = [
  {
    change: 'One setImmediate per turn shared by the batch send, the deadlines and local answers',
    kept: false,
    gain: '0.98–1.01× at 64 in flight: no gain',
    logEntry: MERGES,
  },
  {
    change: "Keeping only the token in the memory store's settle ticket",
    kept: false,
    gain: '909 against 896 bytes allocated per memory-store check: none',
    logEntry: CONTRACT,
  },
  {
    change: 'One promise per script call (FCALL/EVALSHA), recovery only on failure',
    kept: true,
    gain: 'bytes allocated per lone Redis check 12,454 → 11,248',
    logEntry: LONE_CHECK,
  },
  {
    change: "Batch queues kept from turn to turn; a lone check's call without numbering",
    kept: true,
    gain: 'bytes per lone Redis check 11,248 → 9,814; client CPU per check at 64 in flight −8–10%',
    logEntry: LONE_CHECK,
  },
  {
    change: 'Counting instructions of the Node process (callgrind) to compare builds',
    kept: false,
    gain: 'dropped as a method: JIT compilation outweighed any change',
    logEntry: LONE_CHECK,
  },
  {
    change: "Counting the Redis server's instructions per script call (callgrind)",
    kept: true,
    gain: 'a method, repeatable to ±1% with hour-long windows; located the script work',
    logEntry: SCRIPT_WORK,
  },
  {
    change: 'Formatted numbers remembered from call to call; window starts compared as strings',
    kept: true,
    gain: 'Redis instructions per lone fixed-window check 100.4 k → 92.6 k (−7.8%)',
    logEntry: SCRIPT_WORK,
  },
  {
    change: 'The batch reply table kept from call to call',
    kept: true,
    gain: 'per lone check 92.8 k → 89.4 k (−3.7%); per batch of 32 checks −5%',
    logEntry: SCRIPT_WORK,
  },
  {
    change: "A lone check's call in three arguments instead of six (the script's '1' mode)",
    kept: true,
    gain: 'per lone check 88.2 k → 80.4 k instructions (−8.9%); client −200–270 bytes per check',
    logEntry: SCRIPT_WORK,
  },
  {
    change: 'Script tables (values, writes, ttls) kept from call to call',
    kept: false,
    gain: 'none measurable (+3 k instructions, within noise)',
    logEntry: SCRIPT_WORK,
  },
  {
    change: 'The clock from TIME without math.floor',
    kept: false,
    gain: '−0.5 k instructions (0.6%): not worth a less plain line',
    logEntry: SCRIPT_WORK,
  },
  {
    change: "Fixed window's stored value read with string.find and sub instead of a pattern",
    kept: false,
    gain: 'none (88.5 k against 88.5–89.1 k instructions)',
    logEntry: SCRIPT_WORK,
  },
  {
    change: 'Header texts that depend only on the rule (policy items, quoted names) formatted once per rule',
    kept: true,
    gain: 'draft-6 headers 2.2–2.3 → 1.5–1.6 µs per response; Express middleware alone ×0.84–0.90',
    logEntry: EXPRESS_PATH,
  },
  {
    change: 'Express middleware: one then() instead of an async function, its await and its catch',
    kept: true,
    gain: 'Express middleware alone ×0.81–0.84 of before (with the header texts)',
    logEntry: EXPRESS_PATH,
  },
  {
    change: "A Node response's header target as a class instead of an object of two closures",
    kept: true,
    gain: 'Express middleware alone ×0.78–0.82 of before (with both above); real servers: below the noise',
    logEntry: EXPRESS_PATH,
  },
  {
    change: 'Header fields as objects instead of tuples, the -Limit value remembered per rule',
    kept: false,
    gain: 'none (×0.77–0.81 against ×0.79–0.80)',
    logEntry: EXPRESS_PATH,
  },
  {
    change: 'A direct path for a lone check of one single-key rule (no block, no override named)',
    kept: true,
    gain: 'Redis instructions per lone fixed-window check 83.7 k → 75.1 k (−10%); batches unchanged',
    logEntry: LONE_SCRIPT,
  },
  {
    change: "The direct path's reply table kept from call to call",
    kept: true,
    gain: 'per lone check 75.1 k → 74.5 k',
    logEntry: LONE_SCRIPT,
  },
  {
    change: "A direct check's ttl formatted per call instead of remembered in fmt's table",
    kept: true,
    gain: 'per lone check 74.6 k → 72.4 k (−3%)',
    logEntry: LONE_SCRIPT,
  },
  {
    change: 'One remembered number (fmtFresh) for the clock, gcra arrival times and ttls',
    kept: true,
    gain: 'gcra 74.0 k → 73.5 k per lone check; fixed window and token bucket within ±0.5 k',
    logEntry: LONE_SCRIPT,
  },
  {
    change: "Sliding window's stored start compared as a string",
    kept: true,
    gain: 'per lone sliding-window check 77.5 k → 76.2 k',
    logEntry: LONE_SCRIPT,
  },
  {
    change: 'Counting batches through the limiter (32 checks at once) under callgrind',
    kept: false,
    gain: 'dropped as a method: single counts up to 10× off; the script is counted directly',
    logEntry: LONE_SCRIPT,
  },
  {
    change:
      'The check path as one callback chain; the store caller in one callback; replies decoded in the batch',
    kept: true,
    gain: 'client instructions per lone check 73.3 k → 71.0–71.4 k; bytes allocated 9,932 → 8,957',
    logEntry: LONE_CLIENT,
  },
  {
    change: 'A check issued while no call of its slot is in flight sent at once, alone',
    kept: false,
    gain: 'per lone check 71.2 k → 64.7 k instructions; split checks issued together: replaced (below)',
    logEntry: LONE_CLIENT,
  },
  {
    change: 'The deadline of the only call awaiting an answer started at once, not at the check phase',
    kept: false,
    gain: 'per lone check 64.7 k → 61.4 k instructions; replaced by a microtask (below)',
    logEntry: LONE_CLIENT,
  },
  {
    change: 'Checks issued with no call in flight sent together in a microtask; their deadline starts then',
    kept: true,
    gain: 'with the deadline: −7.2 k instructions per lone check against the turn’s end (+2.6 k against at once)',
    logEntry: LONE_CLIENT,
  },
  {
    change: "A lone check's usual argument remembered per rule set (one flat string)",
    kept: true,
    gain: 'per lone check 61.4 k → 59.5 k instructions',
    logEntry: LONE_CLIENT,
  },
  {
    change: 'The batcher sending with callbacks instead of the promise run() returns',
    kept: true,
    gain: 'per lone check 59.5 k → 59.0 k instructions',
    logEntry: LONE_CLIENT,
  },
  {
    change: "A lone check's call in one argument (the clock only when not the server's)",
    kept: true,
    gain: 'client main thread 62.5 k → 58.8 k (rate-limiter-flexible 60.0 k); Redis 73.4 k → 69.4 k',
    logEntry: LONE_CLIENT,
  },
  {
    change: "A per-store cache of each key head's Redis keys",
    kept: false,
    gain: '−1.8 k instructions per lone check while keys repeat; up to ~3 MB per store: left out',
    logEntry: LONE_CLIENT,
  },
  {
    change: 'Counting the Node process with callgrind after a warmup without instrumentation',
    kept: true,
    gain: 'a method (bench/instructions.ts): runs agree within ~0.5%, where timed A/B moved ±10%',
    logEntry: LONE_CLIENT,
  },
  {
    change: "A check's store call answered through a receiver (Store.evaluateWith), not three promises",
    kept: true,
    gain: 'bytes per lone check 8,287 → 7,499; instructions within ±1% until the deadline change below',
    logEntry: RECEIVER,
  },
  {
    change: "Each check's part of a batch reply decoded in place instead of copied out",
    kept: true,
    gain: 'one array per batch instead of two per check; a lone check within noise',
    logEntry: RECEIVER,
  },
  {
    change: 'The deadline queue forgetting its calls as soon as all are answered',
    kept: true,
    gain: 'with the two above: per lone check 61.2 k → 59.8 k instructions (−2.2%); 64 in flight −8.5%',
    logEntry: RECEIVER,
  },
  {
    change: 'Counting bytes allocated per check with the sampling heap profiler',
    kept: true,
    gain: 'a method (bench/allocations.ts): every byte allocated, by function, within ~1%',
    logEntry: RECEIVER,
  },
  {
    change: "The heavy-hitter sketch's key index as an open-addressing table instead of a Map",
    kept: false,
    gain: 'no allocation, but no faster: 121-126 ns against 114-147 ns a miss, 71 against 40-93 ns a hit',
    logEntry: TELEMETRY_COST,
  },
  {
    change: "Checks stamped with the server's clock as the process reads it: no TIME in the script",
    kept: true,
    gain: 'Redis per lone check −9.7 to −11.5% (fixed-window 69.2 k → 62.1 k); client +5–12%, +3.5% bytes',
    logEntry: SERVER_CLOCK,
  },
  {
    change: "fixed-window's guard against a stamp behind its key as a Lua helper function",
    kept: false,
    gain: '+1.1 k Redis instructions per lone check (a Lua call): inlined instead, +0',
    logEntry: SERVER_CLOCK,
  },
];

/** The GitHub-style anchor of a markdown heading (as the bench log's Contents list links them). */
export function anchorOf(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/ /g, '-');
}
