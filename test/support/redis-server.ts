/**
 * Throwaway redis-server processes for tests: each on a free loopback port, nothing on disk,
 * stopped afterwards. Start one per test file (not per case) to keep the suite fast.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createConnection, createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { afterAll, beforeAll } from 'vitest';

export interface RedisServer {
  readonly port: number;
  readonly url: string;
  readonly process: ChildProcess;
  /** Stops the server (SIGTERM, then SIGKILL) and waits for it to exit. */
  stop(): Promise<void>;
}

/** A port that was free a moment ago (the kernel picks it). */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  await once(server, 'close');
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** Sends one inline command over a raw socket and resolves with the first reply line. */
export function rawCommand(port: number, command: string, timeoutMs = 1000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`redis on ${port}: no reply to ${command}`));
    }, timeoutMs);
    let data = '';
    socket.on('connect', () => socket.write(`${command}\r\n`));
    socket.on('data', (chunk) => {
      data += chunk.toString();
      if (data.includes('\r\n')) {
        clearTimeout(timer);
        socket.end();
        resolve(data.slice(0, data.indexOf('\r\n')));
      }
    });
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

/** Waits until the server on `port` answers PING. */
export async function waitForPing(port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if ((await rawCommand(port, 'PING', 500)) === '+PONG') return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not answer PING`);
    await sleep(25);
  }
}

/**
 * Starts a redis-server on `port` (default: a free one) with `args` appended; `config`, a config
 * file read first (a Sentinel needs one it can rewrite).
 */
export async function startRedisServer(
  options: { port?: number; args?: string[]; config?: string } = {},
): Promise<RedisServer> {
  for (let attempt = 0; ; attempt++) {
    const port = options.port ?? (await freePort());
    const child = spawn(
      'redis-server',
      [
        ...(options.config === undefined ? [] : [options.config]),
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--protected-mode',
        'no',
        ...(options.args ?? []),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout?.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr?.on('data', (chunk) => {
      output += chunk;
    });
    const exited = once(child, 'exit').then(() => 'exited' as const);
    const ready = waitForPing(port).then(() => 'ready' as const);
    const outcome = await Promise.race([ready, exited]).catch(() => 'failed' as const);
    if (outcome === 'ready') {
      return {
        port,
        url: `redis://127.0.0.1:${port}`,
        process: child,
        stop: () => stopProcess(child),
      };
    }
    child.kill('SIGKILL');
    // Another process may have taken the port between freePort() and the server's bind.
    if (options.port !== undefined || attempt >= 3)
      throw new Error(`redis-server did not start on ${port}:\n${output}`);
  }
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGCONT');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
  await exited;
  clearTimeout(timer);
}

/**
 * For one test file: starts a throwaway server and an ioredis client on it before the file's
 * tests, hands both to `ready`, and stops them after the tests.
 */
export function useRedisServer(
  ready: (started: { server: RedisServer; client: Redis }) => void | Promise<void>,
): void {
  let started: { server: RedisServer; client: Redis } | undefined;
  beforeAll(async () => {
    const server = await startRedisServer();
    started = { server, client: new Redis(server.port, '127.0.0.1') };
    await ready(started);
  });
  afterAll(async () => {
    started?.client.disconnect();
    await started?.server.stop();
  });
}

export type NodeRedisClient = ReturnType<typeof createClient>;

/** useRedisServer, plus a connected node-redis client on the same server, for tests of both clients. */
export function useRedisServerWithNodeRedis(
  ready: (started: { server: RedisServer; client: Redis; nodeRedis: NodeRedisClient }) => void,
): void {
  let nodeRedis: NodeRedisClient | undefined;
  useRedisServer(async (started) => {
    nodeRedis = createClient({ url: started.server.url });
    await nodeRedis.connect();
    ready({ ...started, nodeRedis });
  });
  // Registered after useRedisServer's: vitest runs it first, before the server stops.
  afterAll(async () => {
    await nodeRedis?.quit();
  });
}

/** Calls of one command (as INFO names it, a regular expression: `fcall`, `function\\|load`) since the stats were last reset. */
export async function commandCalls(client: Redis, command: string): Promise<number> {
  const stats = await client.info('commandstats');
  return Number(stats.match(new RegExp(`cmdstat_${command}:calls=(\\d+)`))?.[1] ?? 0);
}

/** Script calls (FCALL, EVALSHA and EVAL) the server has run since its stats were last reset. */
export async function scriptCalls(client: Redis): Promise<number> {
  const stats = await client.info('commandstats');
  let calls = 0;
  for (const match of stats.matchAll(/cmdstat_(?:fcall|evalsha|eval):calls=(\d+)/g))
    calls += Number(match[1]);
  return calls;
}
