/** The client adapter: which shape of client gets which calling convention. */
import { describe, expect, it } from 'vitest';
import type { ScriptRunner } from '../../../src/index.js';
import { isFunctionsUnavailableError, toScriptRunner } from '../../../src/stores/redis/client.js';

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

  it('calls ioredis through its Buffer variants where it has them, and functions only with a way to load them', async () => {
    const calls: unknown[][] = [];
    const record =
      (name: string) =>
      async (...args: unknown[]) =>
        calls.push([name, ...args]);
    const ioredisLike = {
      evalsha: record('evalsha'),
      eval: record('eval'),
      fcall: record('fcall'),
      evalshaBuffer: record('evalshaBuffer'),
      evalBuffer: record('evalBuffer'),
      fcallBuffer: record('fcallBuffer'),
      call: record('call'),
    };
    const runner = toScriptRunner(ioredisLike);
    await runner.evalSha('sha', ['k'], ['a']);
    await runner.eval('return 1', ['k'], ['a']);
    await runner.fcall?.('fn', ['k'], ['a']);
    await runner.loadLibrary?.('#!lua name=x');
    expect(calls).toEqual([
      ['evalshaBuffer', 'sha', 1, 'k', 'a'],
      ['evalBuffer', 'return 1', 1, 'k', 'a'],
      ['fcallBuffer', 'fn', 1, 'k', 'a'],
      ['call', 'FUNCTION', 'LOAD', 'REPLACE', '#!lua name=x'],
    ]);
    // Without a generic `call` there is no way to load a library: no functions at all.
    const { call: _call, ...withoutCall } = ioredisLike;
    expect(toScriptRunner(withoutCall).fcall).toBeUndefined();
  });
});

describe('isFunctionsUnavailableError', () => {
  it.each([
    ["ERR unknown command 'FCALL', with args beginning with: 'floodgate_x' '2' ", true],
    // Arguments echoed back (key names may say "script:") do not make it an error of the script.
    [
      "ERR unknown command 'FCALLX', with args beginning with: 'floodgate_x' '2' 'o{script:k}' 'script:{k}:fw' ",
      true,
    ],
    ["NOPERM this user has no permissions to run the 'fcall' command", true],
    ["NOPERM User fg has no permissions to run the 'function|load' command", true],
    ['ERR Function not found', false],
    // Raised inside the running function, which may have written already: never re-run.
    [
      "NOPERM User fg has no permissions to run the 'pexpire' command script: floodgate_x, on @user_function:30.",
      false,
    ],
    [
      "ERR The user executing the script can't run this command or subcommand script: floodgate_x, on @user_function:30.",
      false,
    ],
    ['Command timed out', false],
  ])('%s → %s', (message, expected) => {
    expect(isFunctionsUnavailableError(new Error(message))).toBe(expected);
  });
});
