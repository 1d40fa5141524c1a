/**
 * The store's warnings as a limiter emits them: each code once. The limiter asks at creation for
 * its own rules; calendar durability is asked again when calendar rules first arrive at run time,
 * through an override (set here or read from another process), since a limiter without calendar
 * rules in its plans was not told about them.
 */
import type { ResolvedRule } from '../base/types.js';
import type { Store, StoreWarning } from '../stores/types.js';

export interface StoreWarnings {
  /** Asks the store once the limiter exists, for the rules its plans hold. */
  inspect(calendar: boolean): void;
  /** Calendar rules came into use (an override): asks again about calendar durability, once. */
  calendarRules(): void;
}

export function createStoreWarnings(
  store: Store,
  emit: (warning: StoreWarning) => void,
  closed: () => boolean,
): StoreWarnings {
  const emitted = new Set<string>();
  let calendarAsked = false;
  function ask(calendar: boolean): void {
    calendarAsked ||= calendar;
    store.inspect?.({ calendar }).then(
      (warnings) => {
        for (const warning of warnings) {
          if (closed() || emitted.has(warning.code)) continue;
          emitted.add(warning.code);
          emit(warning);
        }
      },
      // A store of the application's own that breaks the contract (never rejects) must not crash it.
      () => undefined,
    );
  }
  return {
    inspect: ask,
    calendarRules() {
      if (!calendarAsked) ask(true);
    },
  };
}

/** Whether rules count by calendar period (the ones whose quotas must survive restarts). */
export const hasCalendarRule = (rules: readonly ResolvedRule[]): boolean =>
  rules.some((rule) => rule.periods !== undefined);
