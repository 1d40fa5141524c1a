/**
 * Reserve, then settle: a check reserves its cost (an estimate, e.g. LLM tokens before the
 * response), and `settle(decision, actual)` later gives back or charges the difference. The
 * limiter remembers what settling needs per decision here, in a private field of the decision
 * object, so a decision stays plain data; a decision can be settled once.
 */

import type { ResolvedRule } from '../base/types.js';
import { describe } from '../describe.js';
import type { RuleOutcome } from '../stores/types.js';
import { attachTicket, type Decision, ticketOf } from './decision.js';

/** What a check left behind for its settle. */
export interface Ticket {
  readonly head: string;
  readonly rules: readonly ResolvedRule[];
  readonly reserved: number;
  /** The store's outcome per rule for the check, each with the token settling needs. */
  readonly outcomes: readonly RuleOutcome[];
  /** Where the reservation was made; undefined when nothing was (a fail-open answer). */
  readonly where: 'store' | 'fallback' | undefined;
  /** Whether its concurrency slots were given back (by `release` or `close`). */
  released: boolean;
}

/** The token each rule of a ticket returned, in rule order. */
export function tokensOf(ticket: Ticket): number[] {
  return ticket.outcomes.map((outcome) => outcome.token);
}

export interface Tickets {
  issue(
    decision: Decision,
    head: string,
    rules: readonly ResolvedRule[],
    reserved: number,
    outcomes: readonly RuleOutcome[],
    where: Ticket['where'],
  ): Ticket;
  /** The decision's ticket, marked settled; throws if there is none or it was settled already. */
  take(decision: unknown): Ticket;
  /** The decision's ticket, if this limiter issued one (an admitted check), settled or not. */
  find(decision: unknown): Ticket | undefined;
}

/** A ticket as it travels with its decision: marked with its owner, so another limiter's decision is refused. */
interface Stub extends Ticket {
  readonly owner: Tickets;
  settled: boolean;
}

export function createTickets(): Tickets {
  // The ticket travels with the decision object itself (see attachTicket); one object per
  // admitted check, forgotten with the decision.
  const tickets: Tickets = {
    issue(decision, head, rules, reserved, outcomes, where) {
      const stub: Stub = {
        owner: tickets,
        head,
        rules,
        reserved,
        outcomes,
        where,
        released: false,
        settled: false,
      };
      attachTicket(decision, stub);
      return stub;
    },
    find(decision) {
      const stub = ticketOf(decision) as Stub | undefined;
      return stub?.owner === tickets ? stub : undefined;
    },
    take(decision) {
      const stub = ticketOf(decision) as Stub | undefined;
      if (stub?.owner !== tickets) {
        throw new TypeError(
          'settle: this decision was not returned by check() of this limiter (pass the decision object itself, not a copy; peek() reserves nothing)',
        );
      }
      if (stub.settled) throw new Error('settle: this decision was settled already');
      stub.settled = true;
      return stub;
    },
  };
  return tickets;
}

/** Validates a settle's actual cost: an integer from 0 to 2^53 − 1. */
export function actualCost(value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(
      `actualCost: ${describe(value)} must be an integer from 0 to ${Number.MAX_SAFE_INTEGER}`,
    );
  }
  return value;
}
