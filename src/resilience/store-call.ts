/**
 * One check's store call: its own deadline entry and its own receiver (of Store.evaluateWith, or
 * of the promise evaluate returns), so a check allocates one object and one promise in the store
 * caller instead of a promise and two callbacks per layer.
 */
import type { ResolvedRule } from '../base/types.js';
import type { EvaluateReceiver, EvaluateReply } from '../stores/types.js';
import type { CallEnds } from './call-ends.js';
import type { Deadlines, Tracked } from './deadline.js';
import type { PolicyAnswer } from './policy-answer.js';
import type { Shard } from './shards.js';
import type { Failure, StoreCallResult } from './types.js';

/** What every call of one store caller shares. */
export interface CallContext {
  readonly deadlines: Deadlines;
  readonly ends: CallEnds;
  readonly answerByPolicy: PolicyAnswer;
}

export class StoreCall implements Tracked, EvaluateReceiver {
  expiresAt = Number.POSITIVE_INFINITY;
  pending = true;
  constructor(
    readonly context: CallContext,
    readonly shard: Shard,
    /** Its number in issue order (see health.ts). */
    readonly issued: number,
    readonly head: string,
    readonly rules: readonly ResolvedRule[],
    readonly cost: number,
    readonly consume: boolean,
    readonly resolve: (result: StoreCallResult | Promise<StoreCallResult>) => void,
    readonly reject: (error: unknown) => void,
  ) {}

  answered(reply: EvaluateReply): void {
    if (!this.context.deadlines.answer(this)) return;
    this.context.ends.answered(this.shard, this.issued);
    this.resolve({ reply, degraded: false });
  }

  failed(error: unknown): void {
    if (!this.context.deadlines.answer(this)) return;
    try {
      this.resolve(this.fallback(this.context.ends.rejected(this.shard, this.issued, error).reason));
    } catch (closed) {
      this.reject(closed);
    }
  }

  expire(): void {
    this.resolve(this.fallback(this.context.ends.timedOut(this.shard, this.issued).reason));
  }

  fallback(reason: Failure['reason']): Promise<StoreCallResult> {
    return this.context.answerByPolicy(reason, this.shard, this.head, this.rules, this.cost, this.consume);
  }
}
