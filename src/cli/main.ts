#!/usr/bin/env node
/**
 * The `floodgate` command: dispatches to a subcommand, loaded only when used (so `compare`
 * never loads Fastify or Redis), and maps every outcome to an exit code scripts can rely on:
 * 0 ok, 1 runtime failure, 2 usage or configuration error. User mistakes print one line.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EXIT_FAILURE, EXIT_USAGE, RuntimeFailure, UsageError } from './args.js';
import { packageRoot } from './package-files.js';

const HELP = `Usage: floodgate <command> [options]

Commands:
  serve            run a rate-limiting HTTP gateway in front of --upstream (or a demo API)
  compare          run every algorithm on the same simulated traffic and print the comparison table
  inspect KEY      show a key's state under each rule (remaining, reset, retry) and its Redis keys
  reset KEY        forget a key's state under every rule
  override ...     set, clear or list a key's override (other rules, or a block) in the shared store
  top              the keys the whole fleet denies (or checks) most, live, from Redis

Run 'floodgate <command> --help' for a command's options.
Exit codes: 0 ok, 1 runtime failure, 2 usage or configuration error.
`;

type Command = (argv: readonly string[]) => Promise<number>;

const COMMANDS: Record<string, () => Promise<Command>> = {
  compare: async () => (await import('./compare/command.js')).compareCommand,
  inspect: async () => (await import('./inspect.js')).inspectCommand,
  reset: async () => (await import('./reset.js')).resetCommand,
  override: async () => (await import('./override.js')).overrideCommand,
  serve: async () => (await import('./serve/command.js')).serveCommand,
  top: async () => (await import('./top.js')).topCommand,
};

export async function main(argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(HELP);
    return name === undefined ? EXIT_USAGE : 0;
  }
  if (name === '--version' || name === '-v') {
    process.stdout.write(`${version()}\n`);
    return 0;
  }
  const load = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (load === undefined) {
    process.stderr.write(
      `floodgate: unknown command '${name}'. Commands: ${Object.keys(COMMANDS).join(', ')}\n`,
    );
    return EXIT_USAGE;
  }
  try {
    return await (await load())(rest);
  } catch (error) {
    return report(error, name);
  }
}

/** Prints an error the way its kind deserves and returns the exit code. */
export function report(error: unknown, command: string): number {
  if (error instanceof UsageError) {
    const hint = error.message.includes('--help') ? '' : ` (see 'floodgate ${command} --help')`;
    process.stderr.write(`floodgate ${command}: ${error.message.replace(/^floodgate \w+: /, '')}${hint}\n`);
    return EXIT_USAGE;
  }
  if (error instanceof RuntimeFailure) {
    process.stderr.write(`floodgate ${command}: ${error.message}\n`);
    return EXIT_FAILURE;
  }
  // Anything else is a bug: keep the stack for the report.
  process.stderr.write(
    `floodgate ${command}: unexpected error\n${error instanceof Error ? error.stack : String(error)}\n`,
  );
  return EXIT_FAILURE;
}

/** The package version (package.json at the package root). */
function version(): string {
  const root = packageRoot();
  if (root === undefined) return 'unknown';
  try {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version?: string };
    return pkg.version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

// A closed stdout (e.g. `floodgate compare | head`) is not an error worth a stack trace.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
});

/** Exits with `code` once the event loop is empty, or after a grace period if a handle lingers. */
function finish(code: number): void {
  process.exitCode = code;
  setTimeout(() => process.exit(code), 2000).unref();
}

main(process.argv.slice(2)).then(finish, (error: unknown) => finish(report(error, 'main')));
