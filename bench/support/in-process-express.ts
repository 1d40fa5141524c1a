/**
 * The HTTP scenario's Express app (bench/support/http-server.ts: one JSON route, the limiter keyed
 * by client address) driven in process: each operation is one request handed to the app as Node's
 * own IncomingMessage and ServerResponse, without a socket, and ends when the response does. What
 * it measures is the request path from Express's router to `res.end`, the limiter's part included,
 * without the parser, the socket writes or a load generator sharing the machine. Or the adapter's
 * middleware alone (`middlewareRequests`): a request with its address, a response, and `next`.
 */
import { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { pathToFileURL } from 'node:url';
import type { RequestHandler } from 'express';
import type { Limiter } from '../../src/index.js';
import type { Operation } from './load.js';

/** One client address per index, `10.x.y.z`, so `count` distinct keys as the default key makes them. */
function addresses(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
}

async function expressAdapter(dir: string, limiter: Limiter): Promise<RequestHandler> {
  const { rateLimit } = (await import(pathToFileURL(`${dir}/http/express.js`).href)) as {
    rateLimit: (options: { limiter: Limiter }) => RequestHandler;
  };
  return rateLimit({ limiter });
}

/**
 * Requests through Express with `dir`'s Express adapter over `limiter`, or through Express alone
 * when `limiter` is undefined (what a limiter costing nothing would leave).
 */
export async function expressRequests(
  dir: string,
  limiter: Limiter | undefined,
  clients: number,
): Promise<Operation> {
  const { default: express } = await import('express');
  const app = express();
  if (limiter !== undefined) app.use(await expressAdapter(dir, limiter));
  app.get('/', (_req, res) => {
    res.json({ hello: 'world' });
  });
  const sockets = addresses(clients).map((remoteAddress) => ({ remoteAddress }) as Socket);
  return (i) =>
    new Promise((done) => {
      const req = new IncomingMessage(sockets[i % sockets.length] as Socket);
      req.method = 'GET';
      req.url = '/';
      req.httpVersionMajor = 1;
      req.httpVersionMinor = 1;
      const res = new ServerResponse(req);
      const end = res.end;
      // Without a socket a response never emits 'finish': its end is where the request is done.
      res.end = function ended(this: ServerResponse, ...args: Parameters<typeof end>) {
        end.apply(this, args);
        done(res.statusCode === 200);
        return this;
      } as typeof end;
      app(req, res);
    });
}

/** Requests through `dir`'s Express middleware alone, ending at its `next()`. */
export async function middlewareRequests(dir: string, limiter: Limiter, clients: number): Promise<Operation> {
  const middleware = await expressAdapter(dir, limiter);
  const socket = {} as Socket;
  const ips = addresses(clients);
  return (i) =>
    new Promise((done) => {
      const req = new IncomingMessage(socket) as IncomingMessage & { ip: string };
      req.ip = ips[i % ips.length] as string;
      const res = new ServerResponse(req);
      middleware(req as never, res as never, () => done(true));
    });
}
