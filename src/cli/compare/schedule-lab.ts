/**
 * `floodgate compare --schedule`: workers in simulated processes call an upstream with a hidden
 * limit (requests and tokens per window, `hidden-limit.ts`) in real time, three ways:
 *  - `direct`: no scheduler; a 429 is waited out for its Retry-After, then retried (the usual
 *    userland handling);
 *  - `rules`: a scheduler per process on one shared store, its rules twice as loose as the
 *    upstream's, headers not read (a 429 still pauses the key);
 *  - `headers`: the same, reading the upstream's headers, so the budget they reveal holds it.
 * Every job reserves an estimate of its tokens and settles with what the response reports.
 * Sampled per bucket: jobs waiting for a turn, grants (upstream calls begun) and 429s.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { memoryStore, type Store } from '../../index.js';
import { createHiddenLimit, type UpstreamAnswer, type UpstreamDialect } from './hidden-limit.js';
import { mulberry32 } from './scenarios.js';

export const LAB_MODES = ['direct', 'rules', 'headers'] as const;
export type LabMode = (typeof LAB_MODES)[number];

export interface ScheduleLabSettings {
  /** The upstream's hidden limit per window. */
  requests: number;
  tokens: number;
  windowMs: number;
  /** Windows each mode runs for. */
  windows: number;
  processes: number;
  /** Workers in all, spread over the processes. */
  workers: number;
  dialect: UpstreamDialect;
  /** How long the upstream takes to answer. */
  latencyMs: number;
  seed: number;
  /** Samples per run. */
  buckets: number;
}

/** What the lab needs of a scheduler (`createScheduler`'s result). */
export interface LabScheduler {
  schedule<T>(
    fn: (grant: {
      settle(cost: number): Promise<void>;
      observe(response: { status: number; headers: unknown }): void;
    }) => T | PromiseLike<T>,
    options?: { key?: string; cost?: number },
  ): Promise<Awaited<T>>;
  counts(): { waiting: number; running: number };
  close(): Promise<void>;
}
export type LabSchedulerFactory = (options: {
  store: Store;
  prefix: string;
  rules: object[];
  headers: 'ietf' | 'openai' | 'anthropic' | 'github' | false;
}) => LabScheduler;

export interface LabSample {
  /** Ms from the start to the end of the bucket. */
  atMs: number;
  waiting: number;
  grants: number;
  limited: number;
}

export interface LabRun {
  mode: LabMode;
  served: number;
  limited: number;
  /** 429s to calls begun after the first answer came back (which reveals the budget). */
  limitedAfterFirstAnswer: number;
  /** Requests served ÷ what the upstream allowed over the run. */
  budgetUsed: number;
  maxWaiting: number;
  samples: LabSample[];
}

/** The reader's dialect for each upstream dialect. */
const READER = {
  openai: 'openai',
  anthropic: 'anthropic',
  github: 'github',
  'github-secondary': 'github',
  ietf: 'ietf',
} as const;

async function runMode(
  mode: LabMode,
  settings: ScheduleLabSettings,
  createScheduler: LabSchedulerFactory,
): Promise<LabRun> {
  const { requests, tokens, windowMs, processes, workers, latencyMs } = settings;
  const durationMs = settings.windows * windowMs;
  const started = Date.now();
  const stopAt = started + durationMs;
  const upstream = createHiddenLimit({
    requests,
    tokens,
    windowMs,
    dialect: settings.dialect,
    startMs: started,
  });
  const random = mulberry32(settings.seed);
  const store = memoryStore();
  const schedulers =
    mode === 'direct'
      ? []
      : Array.from({ length: processes }, () =>
          createScheduler({
            store,
            prefix: 'lab',
            rules: [
              {
                name: 'requests',
                algorithm: 'sliding-window',
                limit: 2 * requests,
                window: windowMs,
                counts: 'requests',
              },
              { name: 'tokens', algorithm: 'sliding-window', limit: 2 * tokens, window: windowMs },
            ],
            headers: mode === 'headers' ? READER[settings.dialect] : false,
          }),
        );
  let grants = 0;
  let limited = 0;
  let served = 0;
  let limitedAfter = 0;
  let firstAnswerAt = Number.POSITIVE_INFINITY;
  let backingOff = 0;

  /** One upstream call: judged when it arrives, answered after the latency. */
  async function call(cost: number): Promise<UpstreamAnswer> {
    const begun = Date.now();
    const answer = upstream.answer(cost, begun);
    // Only calls begun within the run count: the last jobs may still be answered after it.
    if (begun < stopAt) {
      grants += 1;
      if (answer.status === 200) served += 1;
      else limited += 1;
      if (answer.status !== 200 && begun >= firstAnswerAt) limitedAfter += 1;
    }
    await sleep(latencyMs);
    firstAnswerAt = Math.min(firstAnswerAt, Date.now());
    return answer;
  }

  async function worker(index: number): Promise<void> {
    const scheduler = schedulers[index % processes];
    while (Date.now() < stopAt) {
      // An estimate reserved up front (a prompt plus max_tokens), settled with the real use.
      const used = 200 + Math.floor(random() * 1600);
      const estimate = Math.ceil(used * 1.5);
      let answer: UpstreamAnswer;
      if (scheduler === undefined) {
        answer = await call(used);
        if (answer.status !== 200) {
          backingOff += 1;
          await sleep(Math.max(1, Number(answer.headers['retry-after'] ?? 1)) * 1000);
          backingOff -= 1;
        }
        continue;
      }
      try {
        await scheduler.schedule(
          async (grant) => {
            answer = await call(used);
            grant.observe(answer);
            if (answer.status === 200) await grant.settle(answer.tokens);
          },
          { key: 'upstream', cost: estimate },
        );
      } catch {
        return; // closed at the end of the run
      }
    }
  }

  const samples: LabSample[] = [];
  const sampling = (async () => {
    let grantsBefore = 0;
    let limitedBefore = 0;
    for (let n = 1; n <= settings.buckets; n++) {
      await sleep(Math.max(0, started + (n * durationMs) / settings.buckets - Date.now()));
      const waiting =
        mode === 'direct' ? backingOff : schedulers.reduce((sum, s) => sum + s.counts().waiting, 0);
      samples.push({
        atMs: Date.now() - started,
        waiting,
        grants: grants - grantsBefore,
        limited: limited - limitedBefore,
      });
      grantsBefore = grants;
      limitedBefore = limited;
    }
  })();
  const running = Array.from({ length: workers }, (_, index) => worker(index));
  await sampling;
  await Promise.all(schedulers.map((scheduler) => scheduler.close()));
  await Promise.all(running);
  return {
    mode,
    served,
    limited,
    limitedAfterFirstAnswer: limitedAfter,
    budgetUsed: served / (requests * settings.windows),
    maxWaiting: Math.max(0, ...samples.map((sample) => sample.waiting)),
    samples,
  };
}

/** Runs every mode, one after another, each on a fresh upstream. */
export async function runScheduleLab(
  settings: ScheduleLabSettings,
  createScheduler: LabSchedulerFactory,
  onMode: (mode: LabMode) => void = () => {},
): Promise<LabRun[]> {
  const runs: LabRun[] = [];
  for (const mode of LAB_MODES) {
    onMode(mode);
    runs.push(await runMode(mode, settings, createScheduler));
  }
  return runs;
}
