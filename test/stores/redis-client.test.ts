/** The client adapter: which shape of client gets which calling convention. */
import { describe, expect, it } from 'vitest';
import type { ScriptRunner } from '../../src/index.js';
import { toScriptRunner } from '../../src/stores/redis-client.js';

describe('toScriptRunner', () => {
  it('regression: a plain ScriptRunner was mistaken for a node-redis client and got an options object', async () => {
    const calls: unknown[][] = [];
    const runner: ScriptRunner = {
      evalSha: async (...args) => calls.push(['evalSha', ...args]),
      eval: async (...args) => calls.push(['eval', ...args]),
    };
    const adapted = toScriptRunner(runner);
    await adapted.evalSha('sha', ['k1', 'k2'], ['a', 'b']);
    await adapted.eval('script', ['k1'], ['a']);
    expect(calls).toEqual([
      ['evalSha', 'sha', ['k1', 'k2'], ['a', 'b']],
      ['eval', 'script', ['k1'], ['a']],
    ]);
  });

  it('gives node-redis-shaped clients (evalSha, eval, sendCommand) an options object', async () => {
    const calls: unknown[][] = [];
    const nodeRedisLike = {
      evalSha: async (...args: unknown[]) => calls.push(['evalSha', ...args]),
      eval: async (...args: unknown[]) => calls.push(['eval', ...args]),
      sendCommand: async () => undefined,
    };
    await toScriptRunner(nodeRedisLike).evalSha('sha', ['k'], ['a']);
    expect(calls).toEqual([['evalSha', 'sha', { keys: ['k'], arguments: ['a'] }]]);
  });

  it('gives ioredis-shaped clients (evalsha) numkeys and flat arguments', async () => {
    const calls: unknown[][] = [];
    const ioredisLike = {
      evalsha: async (...args: unknown[]) => calls.push(['evalsha', ...args]),
      eval: async (...args: unknown[]) => calls.push(['eval', ...args]),
    };
    await toScriptRunner(ioredisLike).evalSha('sha', ['k1', 'k2'], ['a']);
    expect(calls).toEqual([['evalsha', 'sha', 2, 'k1', 'k2', 'a']]);
  });
});
