/**
 * Shared reservoirs on Redis (see stores/types.ts SharedReservoirs): each operation is one call
 * of the reservoir script (reservoir-script.ts) on the key's own hash, `<head>:~r` (beside the
 * queue's `~` keys, in the key's slot).
 */
import type { ReservoirSettings, ReservoirState, SharedReservoirs } from '../types.js';
import type { Run } from './calls.js';
import { RESERVOIR_SCRIPT } from './reservoir-script.js';

/** The script's field for each setting. */
const FIELDS: Record<keyof ReservoirSettings, string> = {
  reservoir: 'v',
  refreshInterval: 'ri',
  refreshAmount: 'ra',
  increaseInterval: 'ii',
  increaseAmount: 'ia',
  increaseMaximum: 'im',
};

const value = (setting: number | null | undefined): string => (setting == null ? '' : String(setting));

/** `{ taken, level, nextMs, refill }` as the script answers every mode. */
function decodedState(reply: unknown): ReservoirState {
  const [taken, level, nextMs, refill] = Array.isArray(reply) ? reply.map(Number) : [];
  return {
    taken: taken === 1,
    level: level === undefined || level < 0 ? null : level,
    nextMs: nextMs === undefined || nextMs < 0 ? undefined : nextMs,
    refill: refill ?? -1,
  };
}

/** The Redis store's `reservoirs`, on its clock (`now`: '-1' for the server's TIME). */
export function redisReservoirs(run: Run, now: () => string): SharedReservoirs {
  const call = async (head: string, [mode, ...args]: string[]) =>
    decodedState(await run(RESERVOIR_SCRIPT, [`${head}:~r`], [mode as string, now(), ...args]));
  return {
    init: (head, settings, clear) =>
      call(head, [
        'i',
        clear ? '1' : '0',
        ...Object.keys(FIELDS).map((name) => value(settings[name as keyof ReservoirSettings])),
      ]),
    update(head, settings) {
      const pairs: string[] = [];
      for (const [name, field] of Object.entries(FIELDS)) {
        if (name in settings) pairs.push(field, value(settings[name as keyof ReservoirSettings]));
      }
      return call(head, ['u', ...pairs]);
    },
    take: (head, weight) => call(head, ['t', String(weight)]),
    add: (head, amount) => call(head, ['a', String(amount)]),
    giveBack: (head, weight, refill) => call(head, ['b', String(weight), String(refill)]),
  };
}
