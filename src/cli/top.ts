/**
 * `floodgate top`: the fleet's heavy hitters as every limiter and gateway on one Redis merged them
 * (see docs/observability.md), in a terminal view that refreshes itself; printed once with
 * `--once` or when stdout is not a terminal (scripts, tests).
 */
import { redisStore, type TopEntry } from '../index.js';
import { fleetTop, resolvePrefix } from '../internal.js';
import { asUsageError, EXIT_OK, integerOption, parseCommandArgs, stringOption, UsageError } from './args.js';
import { connectRedis, redisTargetFrom } from './redis.js';
import { renderTable } from './table.js';

const REFRESH_MS = 2000;

export const TOP_HELP = `Usage: floodgate top --redis URL [options]

Shows the keys the whole fleet denied (or checked) most over the last 5 to 10 minutes: every
limiter on Redis with topKeys and every gateway merges its heavy hitters into Redis every few
seconds. Counts bound the truth: a key's true count is between count - error and count.
Refreshes every ${REFRESH_MS / 1000} seconds until Ctrl-C; prints once with --once or when stdout is not a terminal.

Options:
  --redis URL               Redis holding the fleet's sketches (default: REDIS_URL)
  --redis-cluster NODES     Redis Cluster seed nodes: host:port,host:port
  --prefix PREFIX           the limiters' prefix (default floodgate)
  --by denied|checked       rank by denials (default) or by checks
  --limit N                 keys shown, 1 to 1000 (default 10)
  --once                    print once and exit
  -h, --help                show this help

Exit codes: 0 ok, 1 runtime failure (e.g. Redis unreachable), 2 usage error.
`;

/** Control characters a hostile key could use to rewrite the terminal. */
const CONTROL = /\p{Cc}/gu;

/** A key as the terminal may show it: control characters as \\xNN. */
function printable(key: string): string {
  return key.replace(CONTROL, (char) => `\\x${char.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** The view: a title line and the table (or a line saying there is nothing yet). */
export function renderTop(entries: readonly TopEntry[], by: 'denied' | 'checked', title: string): string {
  if (entries.length === 0) {
    return `${title}\nno keys yet: limiters merge their heavy hitters every 5 s by default\n`;
  }
  const rows = entries.map((entry, i) => [
    String(i + 1),
    printable(entry.key),
    entry.count.toLocaleString('en-US'),
    entry.error === 0 ? 'exact' : `at least ${(entry.count - entry.error).toLocaleString('en-US')}`,
  ]);
  const counted = by === 'denied' ? 'denials' : 'checks';
  return `${title}\n${renderTable(['#', 'key', counted, 'bound'], rows, ['right', 'left', 'right', 'left'])}\n`;
}

export async function topCommand(argv: readonly string[]): Promise<number> {
  const parsed = parseCommandArgs(
    'top',
    argv,
    {
      redis: { type: 'string' },
      'redis-cluster': { type: 'string' },
      prefix: { type: 'string' },
      by: { type: 'string' },
      limit: { type: 'string' },
      once: { type: 'boolean' },
    },
    0,
  );
  if (parsed.values.help) {
    process.stdout.write(TOP_HELP);
    return EXIT_OK;
  }
  const by = stringOption(parsed, 'by') ?? 'denied';
  if (by !== 'denied' && by !== 'checked') throw new UsageError(`--by: '${by}' must be denied or checked`);
  const limitText = stringOption(parsed, 'limit');
  const limit = limitText === undefined ? 10 : integerOption(limitText, '--limit', 1, 1000);
  const prefix = asUsageError(() => resolvePrefix(stringOption(parsed, 'prefix')));
  const target = redisTargetFrom(stringOption(parsed, 'redis'), stringOption(parsed, 'redis-cluster'));
  if (target === undefined) {
    throw new UsageError('needs --redis URL (or REDIS_URL): the fleet merges its heavy hitters into Redis');
  }
  const connection = await connectRedis(target);
  try {
    const sketches = redisStore({ client: connection.client }).sketches;
    if (sketches === undefined) throw new Error('the Redis store keeps fleet sketches');
    const title = `top ${by === 'denied' ? 'denied' : 'checked'} keys of the fleet, prefix ${prefix}, on ${connection.label}`;
    const show = async () => renderTop(await fleetTop(sketches, prefix, by, limit), by, title);
    if (parsed.values.once === true || process.stdout.isTTY !== true) {
      process.stdout.write(await show());
      return EXIT_OK;
    }
    await refreshUntilInterrupted(show);
    return EXIT_OK;
  } finally {
    await connection.close();
  }
}

/** Redraws the screen every REFRESH_MS until SIGINT or SIGTERM. */
async function refreshUntilInterrupted(show: () => Promise<string>): Promise<void> {
  let stop: () => void = () => {};
  const stopped = new Promise<void>((resolve) => {
    stop = resolve;
  });
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    for (;;) {
      const view = await show();
      // Home and clear, then the view with the time it was read.
      process.stdout.write(`\u001b[H\u001b[2J${view}\n${new Date().toISOString()}  (Ctrl-C to quit)\n`);
      const tick = new Promise<'tick'>((resolve) => setTimeout(() => resolve('tick'), REFRESH_MS).unref());
      if ((await Promise.race([tick, stopped.then(() => 'stop' as const)])) === 'stop') return;
    }
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}
