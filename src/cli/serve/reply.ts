/**
 * Small pieces of the proxy's replies: a problem+json answer, and an idle timer that each sign
 * of life re-arms.
 */
import type { FastifyReply } from 'fastify';
import { PROBLEM_CONTENT_TYPE } from '../../http/problem.js';

/** Sends a problem+json answer; closes the connection when the client may still be sending a body. */
export function sendProblem(
  reply: FastifyReply,
  status: number,
  title: string,
  detail: string,
  close = false,
): void {
  if (close) reply.header('connection', 'close');
  reply
    .code(status)
    .header('cache-control', 'no-store')
    .type(PROBLEM_CONTENT_TYPE)
    .send({ type: 'about:blank', title, status, detail });
}

/** A timer that can be re-armed (each sign of life) and cleared. */
export function idleTimer(ms: number, onIdle: () => void): { arm(): void; clear(): void } {
  let timer: NodeJS.Timeout | undefined;
  return {
    arm() {
      if (timer === undefined) timer = setTimeout(onIdle, ms);
      else timer.refresh();
    },
    clear() {
      clearTimeout(timer);
      timer = undefined;
    },
  };
}
