/**
 * The reservoir of every limiter with one `id` on a shared store, as Bottleneck keeps it in Redis:
 * the store holds the level and refills it on its own clock (stores/types.ts SharedReservoirs);
 * the first limiter of an id sets it, `clearDatastore` replaces it, `updateSettings` and
 * `incrementReservoir` change it for every process. The head's admission takes its weight in one
 * store call (given back when the job does not start). A process whose id had no reservoir when
 * it last asked admits without a call, and asks again at most once a second.
 */
import { keyHead } from '../base/key-encoding.js';
import type { ReservoirSettings, ReservoirState, SharedReservoirs } from '../stores/types.js';
import { unref } from '../turns.js';
import type { Reservoir } from './reservoir.js';
import type { LimitSettings } from './settings.js';

/** How stale this process's knowledge that an id has no reservoir may grow. */
const RECHECK_MS = 1_000;
/** A refill is looked at this much after the store says it is due, so the store's clock has passed it. */
const LATE_MS = 5;

const SETTING_OF: Record<keyof ReservoirSettings, keyof LimitSettings> = {
  reservoir: 'reservoir',
  refreshInterval: 'reservoirRefreshInterval',
  refreshAmount: 'reservoirRefreshAmount',
  increaseInterval: 'reservoirIncreaseInterval',
  increaseAmount: 'reservoirIncreaseAmount',
  increaseMaximum: 'reservoirIncreaseMaximum',
};

/** The reservoir settings among `limits`, only those named in `given` when it is passed. */
function settingsOf(limits: LimitSettings, given?: Record<string, unknown>): Partial<ReservoirSettings> {
  const settings: Record<string, number | null> = {};
  for (const [name, setting] of Object.entries(SETTING_OF)) {
    if (given === undefined || setting in given) settings[name] = limits[setting] as number | null;
  }
  return settings;
}

export interface SharedReservoirOptions {
  readonly reservoirs: SharedReservoirs;
  /** The limiter's prefix on the store and its current id (updateSettings may change it). */
  readonly prefix: string;
  readonly id: () => string;
  readonly limits: LimitSettings;
  /** Replace what the store holds (`clearDatastore`). */
  readonly clear: boolean;
  /** The head may go now (a refill came due). */
  readonly opened: () => void;
}

export function createSharedReservoir(options: SharedReservoirOptions): Reservoir {
  const { reservoirs, prefix, opened } = options;
  const head = () => keyHead(prefix, options.id());
  let known: ReservoirState = { taken: true, level: null, nextMs: undefined, refill: -1 };
  // Options without a reservoir admit at once from the start; the init's answer may say otherwise.
  const configured = Object.values(settingsOf(options.limits)).some((setting) => setting != null);
  let knownAt = configured ? 0 : Date.now();
  /** The head's last admission: the level it left (for `depleted`) and its refresh (for a give-back). */
  let admission: ReservoirState = known;
  let refill: ReturnType<typeof setTimeout> | undefined;
  let alive = false;

  const learn = (state: ReservoirState): ReservoirState => {
    known = state;
    knownAt = Date.now();
    return state;
  };
  const active = () => known.level !== null || known.nextMs !== undefined;
  let ready = reservoirs
    .init(head(), settingsOf(options.limits) as ReservoirSettings, options.clear)
    .then(learn);
  // A failed init is answered by the next call (every operation catches the reservoir up).
  ready.catch(() => undefined);

  /** Nudges the head when the store's next refill is due (it may be this process's turn then). */
  function wakeAtRefill(state: ReservoirState): void {
    clearTimeout(refill);
    refill = undefined;
    if (state.nextMs === undefined) return;
    refill = setTimeout(() => {
      refill = undefined;
      opened();
    }, state.nextMs + LATE_MS);
    if (!alive) unref(refill);
  }

  const read = () => ready.then(() => reservoirs.update(head(), {})).then(learn);

  return {
    async current() {
      return (await read()).level;
    },
    async fits(weight) {
      const { level } = await read();
      return level === null || weight <= level;
    },
    admit(weight) {
      if (!active() && knownAt !== 0) {
        // No reservoir when last asked: admit at once, and look again now and then.
        if (Date.now() - knownAt > RECHECK_MS) read().catch(() => undefined);
        return true;
      }
      return ready
        .then(() => (active() ? reservoirs.take(head(), weight) : known))
        .then((state) => {
          learn(state);
          admission = state;
          if (!state.taken) wakeAtRefill(state);
          return state.taken;
        });
    },
    unadmit(weight) {
      if (!active()) return;
      reservoirs.giveBack(head(), weight, admission.refill).then(learn, () => undefined);
    },
    take() {
      return active() ? admission.level : null;
    },
    async increment(amount) {
      const state = learn(await ready.then(() => reservoirs.add(head(), amount)));
      opened();
      return state.level;
    },
    async configure(limits, given) {
      // A new id is a new reservoir: set it as a new limiter would.
      if ('id' in given)
        ready = reservoirs.init(head(), settingsOf(limits) as ReservoirSettings, false).then(learn);
      const changed = settingsOf(limits, given);
      if (Object.keys(changed).length > 0) learn(await ready.then(() => reservoirs.update(head(), changed)));
      else await ready;
      opened();
    },
    keepAlive(waiting) {
      alive = waiting;
      if (refill === undefined) return;
      if (waiting) (refill as { ref?: () => void }).ref?.();
      else unref(refill);
    },
    stop() {
      clearTimeout(refill);
      refill = undefined;
    },
  };
}
