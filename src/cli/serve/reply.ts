/**
 * Small pieces of the proxy's replies: a problem+json answer, and an idle timer that each sign
 * of life re-arms.
 */
import type { FastifyReply } from 'fastify';
import { PROBLEM_CONTENT_TYPE } from '../../internal.js';

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

/**
 * A timer that can be re-armed (each sign of life) and cleared. Its verdict waits for the event
 * loop's next I/O phase: when this process was busy past the deadline, bytes that arrived in
 * time are read (and re-arm it) before silence is declared.
 */
export function idleTimer(ms: number, onIdle: () => void): { arm(): void; clear(): void } {
  let timer: NodeJS.Timeout | undefined;
  let signs = 0;
  const expire = () => {
    const seen = signs;
    setImmediate(() => {
      if (signs === seen && timer !== undefined) onIdle();
    });
  };
  return {
    arm() {
      signs++;
      if (timer === undefined) timer = setTimeout(expire, ms);
      else timer.refresh();
    },
    clear() {
      signs++;
      clearTimeout(timer);
      timer = undefined;
    },
  };
}
