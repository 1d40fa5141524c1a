/**
 * `floodgate compare --lease`: N simulated processes (each its own limiter, so its own slices) at
 * uneven rates share one fixed-window key, in real time, first without and then with
 * `quotaLease`: on a real Redis, or on the lab's stand-in for a shared store (lab-store.ts). Every
 * tenth of a window it samples the store calls per decision so far and the quota stranded in
 * slices: what the store counts as used in the current window minus what the processes admitted
 * in it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Cluster, Redis } from 'ioredis';
import { createLimiter, type Limiter, redisStore, type Store } from '../../index.js';
import type { Progress } from '../progress.js';
import { createLabStore } from './lab-store.js';

export interface LeaseSettings {
  limit: number;
  windowMs: number;
  processes: number;
  /** Windows each mode runs for. */
  windows: number;
}

export interface LeaseSample {
  /** Ms since the run began. */
  atMs: number;
  decisions: number;
  callsPerDecision: number;
  /** Admitted in the current window, by all processes (checks begun and answered in it). */
  admitted: number;
  /** Units the store counts as used in the current window but no process admitted (held in slices). */
  stranded: number;
}

/** Where the processes share their key. */
export interface LeaseBackend {
  /** For the report, e.g. the Redis URL. */
  readonly label: string;
  /** A store for one more process's limiter. */
  store(): Store;
  /** The store an observer peeks at (its peeks are not counted where that can be avoided). */
  readonly observed: Store;
  /** Store calls (Redis script calls) so far. */
  calls(): Promise<number>;
}

export interface LeaseRun {
  quotaLease: boolean;
  samples: LeaseSample[];
}

/** Demand: 1.5 × the limit per window, process i sending (i + 1) shares of it. */
/** Checks this close to a window's end are not attributed to a window (see the sender). */
const EDGE_MS = 2;
const DEMAND = 1.5;
const SAMPLES_PER_WINDOW = 10;

/** The processes on a real Redis: calls are the server's script calls (INFO commandstats). */
export function redisBackend(label: string, client: Redis | Cluster, server: Redis): LeaseBackend {
  return {
    label,
    store: () => redisStore({ client }),
    observed: redisStore({ client }),
    calls: () => scriptCalls(server),
  };
}

/** The processes on one shared memory store, behind the lab's stand-in that can lease. */
export function memoryBackend(): LeaseBackend {
  const lab = createLabStore();
  return {
    label: 'memory (in-process stand-in for a shared store)',
    store: () => lab.store,
    observed: lab.memory,
    calls: async () => lab.calls(),
  };
}

async function scriptCalls(server: Redis): Promise<number> {
  const stats = await server.info('commandstats');
  let calls = 0;
  for (const match of stats.matchAll(/cmdstat_(?:fcall|evalsha|eval):calls=(\d+)/g))
    calls += Number(match[1]);
  return calls;
}

async function oneRun(
  settings: LeaseSettings,
  backend: LeaseBackend,
  quotaLease: boolean,
  progress: Progress,
): Promise<LeaseRun> {
  const { limit, windowMs, processes } = settings;
  const prefix = `floodgate-compare-lease-${process.pid}-${Date.now()}`;
  const rule = { name: 'shared', algorithm: 'fixed-window', limit, window: windowMs } as const;
  const limiters: Limiter[] = Array.from({ length: processes }, () =>
    createLimiter({
      rules: quotaLease ? { ...rule, quotaLease: true } : rule,
      store: backend.store(),
      prefix,
      timeout: '1s',
      // The lab counts the store's calls: no heavy hitters merged beside them.
      topKeys: 0,
    }),
  );
  const observer = createLimiter({ rules: rule, store: backend.observed, prefix, topKeys: 0 });
  const shares = (processes * (processes + 1)) / 2;
  const label = quotaLease ? 'with quotaLease' : 'without quotaLease';
  const started = performance.now();
  const stopAt = started + settings.windows * windowMs;
  let decisions = 0;
  const admittedIn = new Map<number, number>();
  const callsBefore = await backend.calls();
  const senders = limiters.map(async (limiter, i) => {
    const perMs = (DEMAND * limit * (i + 1)) / shares / windowMs;
    let sent = 0;
    while (performance.now() < stopAt) {
      const due = Math.floor((performance.now() - started) * perMs);
      const checks: Promise<void>[] = [];
      for (; sent < due; sent++) {
        const beganAt = Date.now();
        const began = Math.floor(beganAt / windowMs);
        checks.push(
          limiter.check('key').then((decision) => {
            decisions++;
            // A check whose round trip spanned a window's end could count in either: left out. So
            // is one within EDGE_MS of an end: slices expire on the monotonic clock, which may
            // disagree with Date.now by a millisecond or so.
            const endedAt = Date.now();
            const window = Math.floor(endedAt / windowMs);
            const nearEdge = beganAt % windowMs < EDGE_MS || windowMs - (endedAt % windowMs) <= EDGE_MS;
            if (decision.allowed && window === began && !nearEdge)
              admittedIn.set(window, (admittedIn.get(window) ?? 0) + 1);
          }),
        );
      }
      await Promise.all(checks);
      await sleep(1);
    }
  });
  const samples: LeaseSample[] = [];
  const sampling = (async () => {
    // Every tenth of a window, each taken even when a loaded machine runs it late.
    const total = settings.windows * SAMPLES_PER_WINDOW;
    for (let n = 1; n <= total; n++) {
      await sleep(Math.max(0, started + (n * windowMs) / SAMPLES_PER_WINDOW - performance.now()));
      const peek = await observer.peek('key');
      const used = limit - (peek.allowed ? peek.remaining + 1 : 0);
      const admitted = admittedIn.get(Math.floor(Date.now() / windowMs)) ?? 0;
      const calls = (await backend.calls()) - callsBefore;
      samples.push({
        atMs: Math.round(performance.now() - started),
        decisions,
        callsPerDecision: decisions === 0 ? 0 : calls / decisions,
        admitted,
        stranded: Math.max(0, used - admitted),
      });
      progress.update(label, n, total);
    }
    progress.step(label);
  })();
  await Promise.all([...senders, sampling]);
  await Promise.all(limiters.map((limiter) => limiter.close()));
  await observer.reset('key');
  return { quotaLease, samples };
}

/** Runs the comparison: without leasing, then with it. */
export async function runLeaseComparison(
  settings: LeaseSettings,
  backend: LeaseBackend,
  progress: Progress,
): Promise<LeaseRun[]> {
  try {
    return [
      await oneRun(settings, backend, false, progress),
      await oneRun(settings, backend, true, progress),
    ];
  } finally {
    progress.end();
  }
}

export function leaseText(settings: LeaseSettings, store: string, runs: readonly LeaseRun[]): string {
  const lines = [
    `floodgate compare --lease: ${settings.processes} processes at uneven rates (1 : 2 : … : ${settings.processes}) sending ${DEMAND} × the limit, one fixed-window key, limit ${settings.limit} per ${settings.windowMs} ms`,
    `store: ${store}`,
  ];
  for (const run of runs) {
    lines.push('', run.quotaLease ? 'with quotaLease:' : 'without quotaLease:');
    lines.push('    ms  decisions  store calls/decision  admitted in window  stranded (held in slices)');
    for (const sample of run.samples) {
      lines.push(
        `${String(sample.atMs).padStart(6)}  ${String(sample.decisions).padStart(9)}  ${sample.callsPerDecision.toFixed(4).padStart(20)}  ${String(sample.admitted).padStart(18)}  ${String(sample.stranded).padStart(8)}`,
      );
    }
  }
  return `${lines.join('\n')}\n`;
}
