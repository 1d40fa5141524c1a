/**
 * Sending one call of a script to Redis. On Redis 7+ (and Valkey) the script is a function
 * library, loaded once (on every master of a cluster) and called by name (FCALL): a call then
 * runs only the operation, not the script's whole body. Where the library is missing (restart,
 * FUNCTION FLUSH, a new node) it is loaded again; where functions cannot be used (Redis 6, an ACL
 * without FCALL or FUNCTION, a proxy) calls fall back to EVALSHA for good. By SHA, only when the
 * server answers NOSCRIPT is the script sent in full (which also caches it again). On a cluster,
 * a TRYAGAIN answer (the key's slot is mid-migration) is retried after a short pause. All these
 * answers mean the script did not run; any other failure is passed on and never replayed,
 * because a call that timed out or failed may already have been applied.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { StoreClosedError } from '../../errors.js';
import {
  isFunctionMissingError,
  isFunctionsUnavailableError,
  isNoScriptError,
  isTryAgainError,
  type ScriptRunner,
} from './client.js';
import type { Readiness } from './ready.js';
import type { Script } from './script.js';

/** Sends one call of a script (KEYS, ARGV) and resolves with its reply. */
export type Run = (script: Script, keys: readonly string[], args: string[]) => Promise<unknown>;

/**
 * Sends one call as `run` does, and hands its reply or failure to a callback: the batcher's way,
 * sparing the promise `run` returns (a call per check when checks go one at a time).
 */
export type Send = (
  script: Script,
  keys: readonly string[],
  args: string[],
  answered: (reply: unknown) => void,
  failed: (error: unknown) => void,
) => void;

export interface ScriptCalls {
  run: Run;
  send: Send;
  /**
   * A call Redis runs even while it refuses writes: by the library's no-writes function (a
   * function that may write is refused before it runs), or by EVALSHA (a script is refused only
   * at its first write, and peeks write nothing).
   */
  runReadOnly: Run;
}

/**
 * TRYAGAIN retries: pauses of 10, 20, 40, 80 and 160 ms, about as long as a slot migration takes
 * to move one key's few entries. A migration that takes longer surfaces as an error.
 */
const TRYAGAIN_RETRIES = 5;
const TRYAGAIN_FIRST_DELAY_MS = 10;

/** Each script as seen through its library's no-writes function (see runReadOnly). */
const readOnlyViews = new WeakMap<Script, Script>();

/**
 * @param useFunctions whether to try FCALL first (the user's `functions` option); turned off for
 *   good the first time the server or the user's ACL refuses functions.
 */
export function createScriptCalls(
  runner: ScriptRunner,
  readiness: Readiness,
  useFunctions: boolean,
): ScriptCalls {
  let functions = useFunctions && runner.fcall !== undefined && runner.loadLibrary !== undefined;

  // Full sends of a script in flight, by SHA: after a restart or SCRIPT FLUSH, the calls that all
  // met NOSCRIPT at once wait for one send instead of each sending the whole script.
  const sending = new Map<string, Promise<unknown>>();

  // Library loads in flight, by name: the calls that all met "Function not found" at once wait
  // for one load.
  const loading = new Map<string, Promise<boolean>>();

  /** Loads the script's library; false when it could not be loaded (the call falls back to EVALSHA). */
  function loadLibrary(script: Script): Promise<boolean> {
    let load = loading.get(script.functionName);
    if (load === undefined) {
      load = (runner.loadLibrary as (code: string) => Promise<void>)(script.library).then(
        () => true,
        (error: unknown) => {
          if (isFunctionsUnavailableError(error)) functions = false;
          return false;
        },
      );
      loading.set(script.functionName, load);
      load.finally(() => loading.delete(script.functionName));
    }
    return load;
  }

  /** EVALSHA, and the whole script only on NOSCRIPT (one send shared by the calls that met it). */
  async function evalBySha(script: Script, keys: readonly string[], args: string[]): Promise<unknown> {
    try {
      return await runner.evalSha(script.sha, keys, args);
    } catch (error) {
      return afterNoScript(error, script, keys, args);
    }
  }

  /** After a failed EVALSHA: NOSCRIPT means the script never ran, so it can be sent again. */
  async function afterNoScript(
    error: unknown,
    script: Script,
    keys: readonly string[],
    args: string[],
  ): Promise<unknown> {
    if (!isNoScriptError(error)) throw error;
    const inFlight = sending.get(script.sha);
    if (inFlight !== undefined) {
      await inFlight.catch(() => undefined);
      try {
        return await runner.evalSha(script.sha, keys, args);
      } catch (again) {
        // Another cluster node may still lack it: send it in full below.
        if (!isNoScriptError(again)) throw again;
      }
    }
    const send = runner.eval(script.text, keys, args);
    sending.set(script.sha, send);
    try {
      return await send;
    } finally {
      if (sending.get(script.sha) === send) sending.delete(script.sha);
    }
  }

  /** After a failed FCALL: EVALSHA where functions cannot be used, or after loading a missing library. */
  async function afterFunctionFailed(
    error: unknown,
    script: Script,
    keys: readonly string[],
    args: string[],
  ): Promise<unknown> {
    if (isFunctionsUnavailableError(error)) {
      functions = false;
      return evalBySha(script, keys, args);
    }
    if (!isFunctionMissingError(error)) throw error;
    if (await loadLibrary(script)) {
      try {
        return await (runner.fcall as NonNullable<ScriptRunner['fcall']>)(script.functionName, keys, args);
      } catch (again) {
        if (isFunctionsUnavailableError(again)) functions = false;
        // Loaded and still missing: the key's node was not among the masters the client knew.
        else if (!isFunctionMissingError(again)) throw again;
      }
    }
    return evalBySha(script, keys, args);
  }

  /**
   * One call: FCALL while functions are in use, else EVALSHA, with one promise of its own; only a
   * failure goes through the async recovery (reloads, TRYAGAIN pauses), which this call seldom needs.
   */
  function attempt(script: Script, keys: readonly string[], args: string[], tries: number): Promise<unknown> {
    const byFunction = functions;
    return callOnce(script, keys, args, byFunction).then(undefined, (error: unknown) =>
      recover(error, script, keys, args, tries, byFunction),
    );
  }

  /** The client's own promise of one FCALL or EVALSHA, a throw included. */
  function callOnce(
    script: Script,
    keys: readonly string[],
    args: string[],
    byFunction: boolean,
  ): Promise<unknown> {
    try {
      const sent = byFunction
        ? (runner.fcall as NonNullable<ScriptRunner['fcall']>)(script.functionName, keys, args)
        : runner.evalSha(script.sha, keys, args);
      return sent instanceof Promise ? sent : Promise.resolve(sent);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  async function recover(
    error: unknown,
    script: Script,
    keys: readonly string[],
    args: string[],
    tries: number,
    byFunction: boolean,
  ): Promise<unknown> {
    try {
      return await (byFunction
        ? afterFunctionFailed(error, script, keys, args)
        : afterNoScript(error, script, keys, args));
    } catch (failure) {
      if (runner.closed?.() === true) throw new StoreClosedError('redis', failure);
      // TRYAGAIN also means the script never ran, so running it again cannot double count.
      if (!isTryAgainError(failure) || tries >= TRYAGAIN_RETRIES) throw failure;
      await sleep(TRYAGAIN_FIRST_DELAY_MS * 2 ** tries);
      return attempt(script, keys, args, tries + 1);
    }
  }

  function run(script: Script, keys: readonly string[], args: string[]): Promise<unknown> {
    if (readiness.ready) return attempt(script, keys, args, 0);
    return readiness.beforeCall().then(() => attempt(script, keys, args, 0));
  }

  const send: Send = (script, keys, args, answered, failed) => {
    if (!readiness.ready) {
      run(script, keys, args).then(answered, failed);
      return;
    }
    const byFunction = functions;
    callOnce(script, keys, args, byFunction).then(answered, (error: unknown) =>
      recover(error, script, keys, args, 0, byFunction).then(answered, failed),
    );
  };

  function runReadOnly(script: Script, keys: readonly string[], args: string[]): Promise<unknown> {
    let view = readOnlyViews.get(script);
    if (view === undefined) {
      view = { ...script, functionName: script.readOnlyFunctionName };
      readOnlyViews.set(script, view);
    }
    return run(view, keys, args);
  }

  return { run, send, runReadOnly };
}
