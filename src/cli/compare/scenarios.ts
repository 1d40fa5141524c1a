/**
 * Traffic scenarios for `floodgate compare`: the same deterministic arrivals (times in ms from a
 * window-aligned start, and which client sent each) are fed to every algorithm, so the only
 * difference between two rows of the table is the algorithm.
 */

export const SCENARIO_NAMES = ['steady', 'bursty', 'boundary', 'flood', 'many'] as const;
export type ScenarioName = (typeof SCENARIO_NAMES)[number];

export interface ScenarioParams {
  /** Requests per window the limit allows. */
  limit: number;
  /** Window length in ms. */
  windowMs: number;
  /** Seed of the pseudo-random parts (bursty, many). */
  seed: number;
  /** Clients in the `many` scenario. Default: about 200,000 requests in total, 10 to 1000 clients. */
  clients?: number;
}

export interface Scenario {
  readonly name: ScenarioName;
  /** One line saying what the traffic is, with the numbers. */
  readonly description: string;
  readonly durationMs: number;
  /** Client names; `keys[i]` indexes this list. */
  readonly keyNames: readonly string[];
  /** The client whose traffic the chart shows. */
  readonly focusKey: number;
  /** Arrival times in ms from the start, ascending. */
  readonly times: Float64Array;
  /** The client of each arrival. */
  readonly keys: Uint32Array;
}

/** Builds one scenario's arrivals. */
export function buildScenario(name: ScenarioName, params: ScenarioParams): Scenario {
  const { limit: L, windowMs: W } = params;
  const random = mulberry32(params.seed);
  const arrivals: [number, number][] = [];
  const keyNames: string[] = [];
  const addKey = (keyName: string) => keyNames.push(keyName) - 1;
  let description: string;
  let durationMs: number;
  let focusKey = 0;

  switch (name) {
    case 'steady': {
      // 1.5 × the limit, evenly spaced, for four windows.
      const key = addKey('client');
      const count = 6 * L;
      durationMs = 4 * W;
      for (let i = 0; i < count; i++) arrivals.push([Math.floor((i * durationMs) / count), key]);
      description = `one client sending 1.5 × the limit, evenly spaced, for 4 windows (${count} requests)`;
      break;
    }
    case 'bursty': {
      // Ten bursts of 0.3-1.2 × the limit, each packed into 1/50 of a window, at random times.
      const key = addKey('client');
      durationMs = 6 * W;
      const span = Math.max(1, Math.floor(W / 50));
      let total = 0;
      for (let burst = 0; burst < 10; burst++) {
        const start = Math.floor(random() * (durationMs - span));
        const size = Math.max(1, Math.round(L * (0.3 + 0.9 * random())));
        for (let i = 0; i < size; i++) arrivals.push([start + Math.floor((i * span) / size), key]);
        total += size;
      }
      description = `one client sending 10 bursts of 0.3-1.2 × the limit, each within 1/50 of a window, at random times over 6 windows (${total} requests)`;
      break;
    }
    case 'boundary': {
      // The limit in the last tenth of a window, and the limit again in the first tenth of the next.
      const key = addKey('client');
      durationMs = 2 * W;
      const tenth = W / 10;
      for (let i = 0; i < L; i++) arrivals.push([Math.floor(W - tenth + (i * tenth) / L), key]);
      for (let i = 0; i < L; i++) arrivals.push([Math.floor(W + (i * tenth) / L), key]);
      description = `one client sending the limit in the last tenth of a window and the limit again in the first tenth of the next (${2 * L} requests)`;
      break;
    }
    case 'flood': {
      // One client at 10 × the limit, next to 20 well-behaved clients at half the limit.
      durationMs = 3 * W;
      focusKey = addKey('flooder');
      const floodCount = 30 * L;
      for (let i = 0; i < floodCount; i++)
        arrivals.push([Math.floor((i * durationMs) / floodCount), focusKey]);
      const politeCount = Math.max(1, Math.floor(1.5 * L));
      for (let client = 0; client < 20; client++) {
        const key = addKey(`client-${client}`);
        const phase = (client * durationMs) / politeCount / 20;
        for (let i = 0; i < politeCount; i++) {
          arrivals.push([Math.floor(phase + (i * durationMs) / politeCount), key]);
        }
      }
      description = `one client flooding at 10 × the limit for 3 windows, next to 20 clients at half the limit (${floodCount + 20 * politeCount} requests)`;
      break;
    }
    case 'many': {
      // Many clients, each with random (Poisson) arrivals averaging 1.1 × the limit per window.
      durationMs = 3 * W;
      const clients = params.clients ?? Math.min(1000, Math.max(10, Math.floor(200_000 / (3.3 * L))));
      const meanGap = W / (1.1 * L);
      for (let client = 0; client < clients; client++) {
        const key = addKey(`client-${client}`);
        for (
          let t = -Math.log(1 - random()) * meanGap;
          t < durationMs;
          t += -Math.log(1 - random()) * meanGap
        ) {
          arrivals.push([Math.floor(t), key]);
        }
      }
      description = `${clients} clients, each with random arrivals averaging 1.1 × the limit per window, for 3 windows (${arrivals.length} requests)`;
      break;
    }
  }

  arrivals.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const times = new Float64Array(arrivals.length);
  const keys = new Uint32Array(arrivals.length);
  for (let i = 0; i < arrivals.length; i++) {
    const [at, key] = arrivals[i] as [number, number];
    times[i] = at;
    keys[i] = key;
  }
  return { name, description, durationMs, keyNames, focusKey, times, keys };
}

/** A small, fast, seedable PRNG (Mulberry32): the same seed always gives the same traffic. */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return function next() {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
