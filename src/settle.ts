/**
 * Reserve, then settle: a check reserves its cost (an estimate, e.g. LLM tokens before the
 * response), and `settle(decision, actual)` later gives back or charges the difference. The
 * limiter remembers what settling needs per decision here, in a private field of the decision
 * object, so a decision stays plain data; a decision can be settled once.
 */
import { attachTicket, type Decision, ticketOf } from './decision.js';
import { describe } from './duration.js';
import type { ResolvedRule } from './rules.js';

/** What a check left behind for its settle. */
export interface Ticket {
  readonly head: string;
  readonly rules: readonly ResolvedRule[];
  readonly reserved: number;
  /** The token each rule returned (see Evaluation.token). */
  readonly tokens: readonly number[];
  /** Where the reservation was made; undefined when nothing was (a fail-open answer). */
  readonly where: 'store' | 'fallback' | undefined;
  settled: boolean;
}

export interface Tickets {
  issue(decision: Decision, ticket: Ticket): void;
  /** The decision's ticket, marked settled; throws if there is none or it was settled already. */
  take(decision: unknown): Ticket;
}

interface Stub {
  readonly owner: Tickets;
  readonly ticket: Ticket;
}

export function createTickets(): Tickets {
  // The ticket travels with the decision object itself (see attachTicket), marked with its
  // owner so that another limiter's decision is refused; it is forgotten with the decision.
  const tickets: Tickets = {
    issue(decision, ticket) {
      attachTicket(decision, { owner: tickets, ticket } satisfies Stub);
    },
    take(decision) {
      const stub = ticketOf(decision) as Stub | undefined;
      const ticket = stub?.owner === tickets ? stub.ticket : undefined;
      if (ticket === undefined) {
        throw new TypeError(
          'settle: this decision was not returned by check() of this limiter (pass the decision object itself, not a copy; peek() reserves nothing)',
        );
      }
      if (ticket.settled) throw new Error('settle: this decision was settled already');
      ticket.settled = true;
      return ticket;
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
