/**
 * Runs the `floodgate` command as a real process (`node --import tsx src/cli/main.ts ...`):
 * once to completion (`runCli`), or as a long-running gateway (`startCli`) whose JSON log lines
 * can be awaited.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const MAIN = 'src/cli/main.ts';

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

function spawnCli(args: readonly string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', MAIN, ...args], {
    cwd: ROOT,
    env: { ...process.env, REDIS_URL: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Runs the command to completion. */
export async function runCli(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  const child = spawnCli(args, env);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk) => {
    stdout += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  const [code] = (await once(child, 'close')) as [number | null];
  return { code, stdout, stderr };
}

export interface RunningCli {
  readonly process: ChildProcess;
  /** Every JSON log line so far. */
  readonly logs: Record<string, unknown>[];
  readonly stderr: () => string;
  /** Resolves with the first log line (past or future) that matches. */
  waitForLog(
    match: (line: Record<string, unknown>) => boolean,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
  /** Sends SIGKILL if still running. */
  kill(): void;
}

/** Starts a long-running command; JSON lines on stdout are collected as logs. */
export function startCli(args: readonly string[], env: NodeJS.ProcessEnv = {}): RunningCli {
  const child = spawnCli(args, env);
  const logs: Record<string, unknown>[] = [];
  const waiters: {
    match: (line: Record<string, unknown>) => boolean;
    resolve: (line: Record<string, unknown>) => void;
  }[] = [];
  let buffer = '';
  let stderr = '';
  child.stdout?.on('data', (chunk) => {
    buffer += chunk;
    let newline = buffer.indexOf('\n');
    while (newline >= 0) {
      const text = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      newline = buffer.indexOf('\n');
      let line: Record<string, unknown>;
      try {
        line = JSON.parse(text) as Record<string, unknown>;
      } catch {
        line = { unparsed: text };
      }
      logs.push(line);
      for (const waiter of [...waiters]) {
        if (waiter.match(line)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(line);
        }
      }
    }
  });
  child.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  return {
    process: child,
    logs,
    stderr: () => stderr,
    exited,
    waitForLog(match, timeoutMs = 10_000) {
      const found = logs.find(match);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          reject(
            new Error(
              `no matching log line within ${timeoutMs} ms; stderr: ${stderr}; logs: ${JSON.stringify(logs)}`,
            ),
          );
        }, timeoutMs);
        waiters.push({
          match,
          resolve: (line) => {
            clearTimeout(timer);
            resolve(line);
          },
        });
        exited.then(() => {
          clearTimeout(timer);
          reject(new Error(`the process exited; stderr: ${stderr}; logs: ${JSON.stringify(logs)}`));
        });
      });
    },
    kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}
