/**
 * Concurrency slots a limiter's admitted checks hold: giving them back (`release`), extending
 * their lease (`renew`), and giving back every one still held when the limiter closes. A
 * decision carries what releasing needs in its private ticket (the key's head, the rules and each
 * slot's id), so no raw key ever reaches the caller.
 */

import { type ResolvedRule, ruleCost } from '../base/types.js';
import type { StoreCaller } from '../resilience/store-caller.js';
import type { RuleOutcome, SlotAction } from '../stores/types.js';
import type { Ticket, Tickets } from './settle.js';

export interface Slots {
  /** Remembers an admitted check whose rules hold slots, until it is released. */
  holding(ticket: Ticket): void;
  /** Gives a decision's slots back; a no-op for a decision that holds none, or no longer does. */
  release(decision: unknown): Promise<void>;
  /** Extends a decision's leases; resolves whether every slot it took was still held. */
  renew(decision: unknown): Promise<boolean>;
  /** Releases every slot still held (on close). */
  releaseAll(): Promise<void>;
  /** Visits every slot rule of every admitted check whose slots are held now, with its slots. */
  inUse(visit: (rule: string, slots: number) => void): void;
}

interface SlotRules {
  readonly rules: ResolvedRule[];
  /** Each slot rule's position in the full list. */
  readonly at: number[];
  /** The longest lease among them. */
  readonly leaseMs: number;
}

/** Computed once per rule list. */
const slotRulesOf = new WeakMap<readonly ResolvedRule[], SlotRules>();

function slotRules(rules: readonly ResolvedRule[]): SlotRules {
  let found = slotRulesOf.get(rules);
  if (found === undefined) {
    const at = rules.flatMap((rule, i) => (rule.algorithm.slots === undefined ? [] : [i]));
    const chosen = at.map((i) => rules[i] as ResolvedRule);
    found = { rules: chosen, at, leaseMs: Math.max(0, ...chosen.map((rule) => rule.windowMs)) };
    slotRulesOf.set(rules, found);
  }
  return found;
}

/** Fewest held tickets before the first sweep. */
const SWEEP_FROM = 1024;

export function createSlots(tickets: Tickets, caller: StoreCaller, clock: () => number): Slots {
  // Tickets whose slots may still be held, for close(), with when their leases run out by this
  // process's clock. A caller that never releases would grow this without end: once it doubles,
  // tickets whose leases ran out are swept (the store has let those slots go already).
  const held = new Map<Ticket, number>();
  let sweepAt = SWEEP_FROM;

  function hold(ticket: Ticket): void {
    held.set(ticket, clock() + slotRules(ticket.rules).leaseMs);
    if (held.size < sweepAt) return;
    const now = clock();
    for (const [old, until] of held) if (until <= now) held.delete(old);
    sweepAt = Math.max(SWEEP_FROM, 2 * held.size);
  }

  function change(ticket: Ticket, action: SlotAction): Promise<number | undefined> {
    const { rules, at } = slotRules(ticket.rules);
    const tokens = at.map((i) => (ticket.outcomes[i] as RuleOutcome).token);
    const where = ticket.where as 'store' | 'fallback';
    return caller.slots(where, ticket.head, rules, ticket.reserved, tokens, action);
  }

  async function release(ticket: Ticket): Promise<void> {
    if (ticket.released) return;
    ticket.released = true;
    held.delete(ticket);
    await change(ticket, 'release');
  }

  return {
    holding: hold,
    async release(decision) {
      const ticket = tickets.find(decision);
      if (ticket === undefined || ticket.where === undefined) return;
      if (slotRules(ticket.rules).at.length > 0) await release(ticket);
    },
    async renew(decision) {
      const ticket = tickets.find(decision);
      if (ticket === undefined || ticket.where === undefined || ticket.released) return false;
      const { rules } = slotRules(ticket.rules);
      if (rules.length === 0) return false;
      const renewed = await change(ticket, 'renew');
      let taken = 0;
      for (const rule of rules) taken += ruleCost(rule, ticket.reserved);
      const all = renewed === taken;
      if (all && !ticket.released) hold(ticket);
      return all;
    },
    async releaseAll() {
      await Promise.all([...held.keys()].map(release));
    },
    inUse(visit) {
      const now = clock();
      // A lease that ran out without a release holds nothing in the store any more.
      for (const [ticket, until] of held) {
        if (until <= now) continue;
        for (const rule of slotRules(ticket.rules).rules) visit(rule.name, ruleCost(rule, ticket.reserved));
      }
    },
  };
}
