/**
 * Response-aware counting: a check reserves its cost when the request arrives (so concurrent
 * requests can never slip past a limit while their responses are pending), and once the
 * response has ended the reservation is given back (`skipFailedRequests`,
 * `skipSuccessfulRequests`) or settled to the actual cost the response reports (`settle`).
 * Adapters only say when a response ended and what it ended with (see `ResponseEnd`).
 */
import type { Decision } from '../core/decision.js';
import type { Settling } from '../core/settled.js';
import { describe } from '../describe.js';
import type { Limiter } from '../limiter.js';
import { HEADER_NAME } from './headers.js';
import type { Unhold } from './hold.js';

type MaybePromise<T> = T | Promise<T>;

/** How a response ended: `undefined` when it was cut short (the client went away, or the handler destroyed it). */
export type ResponseEnd<Res> =
  | {
      /** The framework's response object, as the options' callbacks receive it. */
      readonly res: Res;
      readonly status: number;
      /** A response header, or the trailer of that name when one was sent; `name` is lowercase. */
      field(name: string): string | undefined;
    }
  | undefined;

/** A response's head as it is about to be sent: its status and its header fields (`name` lowercase). */
export interface ResponseHead {
  readonly status: number;
  field(name: string): string | undefined;
}

/** Called once when a request's response has ended, however it ended. */
export type AfterResponse<Res> = (end: ResponseEnd<Res>) => void;

/** The options of this file, as given. */
export interface OutcomeOptions<Req, Res> {
  skipFailedRequests?: boolean;
  skipSuccessfulRequests?: boolean;
  requestWasSuccessful?: (req: Req, res: Res) => MaybePromise<boolean>;
  settle?: string | ((req: Req, res: Res) => MaybePromise<number>);
}

/** The validated form; `undefined` when no option asks for anything after the response. */
export interface Outcome<Req, Res> {
  readonly skipFailed: boolean;
  readonly skipSuccessful: boolean;
  readonly wasSuccessful: ((req: Req, res: Res) => MaybePromise<boolean>) | undefined;
  /** The actual cost from a function, or from the header (or trailer) of this lowercase name. */
  readonly settle: string | ((req: Req, res: Res) => MaybePromise<number>) | undefined;
}

export const OUTCOME_OPTIONS = [
  'skipFailedRequests',
  'skipSuccessfulRequests',
  'requestWasSuccessful',
  'settle',
] as const;

/** Validates the response-aware options. */
export function parseOutcome<Req, Res>(options: OutcomeOptions<Req, Res>): Outcome<Req, Res> | undefined {
  const skipFailed = flag(options.skipFailedRequests, 'skipFailedRequests');
  const skipSuccessful = flag(options.skipSuccessfulRequests, 'skipSuccessfulRequests');
  if (skipFailed && skipSuccessful) {
    throw new RangeError(
      'skipFailedRequests, skipSuccessfulRequests: give at most one of them true (both would count no request)',
    );
  }
  const wasSuccessful = options.requestWasSuccessful;
  if (wasSuccessful !== undefined) {
    if (typeof wasSuccessful !== 'function') {
      throw new TypeError(
        `requestWasSuccessful: expected a function (req, res) => boolean, got ${describe(wasSuccessful)}`,
      );
    }
    if (!skipFailed && !skipSuccessful) {
      throw new RangeError(
        'requestWasSuccessful: only used with skipFailedRequests: true or skipSuccessfulRequests: true; give one of them',
      );
    }
  }
  const { settle } = options;
  if (
    settle !== undefined &&
    typeof settle !== 'function' &&
    !(typeof settle === 'string' && HEADER_NAME.test(settle))
  ) {
    throw new TypeError(
      `settle: ${describe(settle)} must be a header name (read as a non-negative integer) or a function (req, res) => actual cost`,
    );
  }
  if (!skipFailed && !skipSuccessful && settle === undefined) return undefined;
  return {
    skipFailed,
    skipSuccessful,
    wasSuccessful,
    settle: typeof settle === 'string' ? settle.toLowerCase() : settle,
  };
}

function flag(value: unknown, option: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean')
    throw new TypeError(`${option}: expected true or false, got ${describe(value)}`);
  return value;
}

const ignore = (): undefined => undefined;

/**
 * What a guard does once an allowed request's response has ended: gives its concurrency slots
 * back (`unhold`) and settles its reservation per `outcome`. Undefined when there is nothing to do.
 */
export function afterResponse<Req, Res>(
  limiter: Limiter,
  outcome: Outcome<Req, Res> | undefined,
  req: Req,
  decision: Decision,
  unhold: Unhold | undefined,
): AfterResponse<Res> | undefined {
  // A denial reserved nothing (the limiter's settle is a no-op for a fail-open decision too).
  const settles = outcome !== undefined && decision.allowed;
  if (!settles && unhold === undefined) return undefined;
  let ended = false;
  return function responseEnded(end) {
    if (ended) return;
    ended = true;
    unhold?.();
    // A store failure is the limiter's storeError; a bad actual cost leaves the reservation.
    if (settles) conclude(limiter, outcome, req, decision, end).catch(ignore);
  };
}

async function conclude<Req, Res>(
  limiter: Limiter,
  outcome: Outcome<Req, Res>,
  req: Req,
  decision: Decision,
  end: ResponseEnd<Res>,
): Promise<void> {
  // Cut short: counted as failed (as express-rate-limit does); nothing else is known.
  if (end === undefined) {
    if (outcome.skipFailed) await limiter.refund(decision);
    return;
  }
  if (outcome.skipFailed || outcome.skipSuccessful) {
    const succeeded =
      outcome.wasSuccessful === undefined ? end.status < 400 : await outcome.wasSuccessful(req, end.res);
    if (succeeded ? outcome.skipSuccessful : outcome.skipFailed) {
      await limiter.refund(decision);
      return;
    }
  }
  const { settle } = outcome;
  if (settle === undefined) return;
  const actual = typeof settle === 'string' ? countField(end.field(settle)) : await settle(req, end.res);
  if (actual !== undefined) await limiter.settle(decision, actual);
}

/**
 * How an allowed check will be settled, when `head` tells it already: the status decides a
 * skip (with the default `requestWasSuccessful`), a header of that name the actual cost.
 * Undefined when only the end of the response can tell: a custom `requestWasSuccessful`, a
 * `settle` function, or an actual cost not (yet) in the head, as a trailer's.
 */
export function settlingAt<Req, Res>(outcome: Outcome<Req, Res>, head: ResponseHead): Settling | undefined {
  if (outcome.skipFailed || outcome.skipSuccessful) {
    if (outcome.wasSuccessful !== undefined) return undefined;
    if (head.status < 400 ? outcome.skipSuccessful : outcome.skipFailed) return { refund: true };
  }
  if (typeof outcome.settle !== 'string') return undefined;
  const actual = countField(head.field(outcome.settle));
  return actual === undefined ? undefined : { actual };
}

/** A header's value as a non-negative integer; undefined when missing or not one. */
export function countField(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (!/^\d{1,16}$/.test(text)) return undefined;
  const count = Number(text);
  return Number.isSafeInteger(count) ? count : undefined;
}
