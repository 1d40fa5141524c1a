/**
 * Responses that stay open while a test looks at the limiter: a Fetch API server hosted on
 * node:http the way Bun and Deno run one, and raw clients that see a response's end or drop it.
 */
import { once } from 'node:events';
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { FetchGuard } from '../../../src/http/fetch.js';
import { type App, listen, toRequest } from './apps.js';

/**
 * Serves `handle` behind `guard`: the request's signal aborts when its client goes, a handler
 * that throws ends the request (as the platform would abort it), bodies are streamed through.
 */
export function hostFetchGuard(
  guard: FetchGuard,
  handle: (request: Request) => Promise<Response>,
): Promise<App> {
  return listen(
    createServer(async (req: IncomingMessage, res: ServerResponse) => {
      const aborted = new AbortController();
      res.once('close', () => aborted.abort());
      const request = new Request(toRequest(req, 'http://127.0.0.1'), { signal: aborted.signal });
      const limited = await guard(request, { ip: req.socket.remoteAddress });
      let response: Response;
      try {
        response = limited ?? guard.withHeaders(request, await handle(request));
      } catch {
        aborted.abort();
        res.statusCode = 500;
        res.end();
        return;
      }
      res.writeHead(response.status, Object.fromEntries(response.headers));
      if (response.body === null) return void res.end();
      const reader = response.body.getReader();
      res.once('close', () => void reader.cancel().catch(() => undefined));
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) res.write(chunk.value);
      res.end();
    }),
  );
}

/** GET `path` on a connection of its own; resolves with the status once the response has ended. */
export function statusOf(app: App, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${app.url}${path}`, { agent: false });
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

/** GET `path`, resolving once its first body chunk arrived; `abort` then drops the connection. */
export function startStream(
  app: App,
  path: string,
): Promise<{ status: number; abort(): void; ended: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${app.url}${path}`, { agent: false });
    req.on('response', (res) => {
      // An abort is the test's own doing: the response's 'aborted' error is expected.
      res.on('error', () => undefined);
      const ended = once(res, 'end').then(
        () => undefined,
        () => undefined,
      );
      res.once('data', () => resolve({ status: res.statusCode ?? 0, abort: () => req.destroy(), ended }));
    });
    req.on('error', reject);
    req.end();
  });
}
