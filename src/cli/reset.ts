/** `floodgate reset KEY`: forget a key's state under every rule of the gateway's configuration. */
import { EXIT_OK } from './args.js';
import { STORE_FLAGS_HELP } from './config/load.js';
import { knownRules, limiterFor, prepare, redisKeys } from './operate.js';

export const RESET_HELP = `Usage: floodgate reset KEY [options]

Forgets KEY's state under every rule of the gateway's configuration (all plans and routes), so
its next request starts with a full quota.

Options:
${STORE_FLAGS_HELP}
  --ip ADDRESS              instead of KEY: the key the HTTP adapters give this client address
  --api-key KEY             instead of KEY: the key they give this API key (never printed)
  --json                    print JSON
  -h, --help                show this help

Exit codes: 0 ok, 1 runtime failure (e.g. Redis unreachable), 2 usage or configuration error.
`;

export async function resetCommand(argv: readonly string[]): Promise<number> {
  const setup = await prepare('reset', argv);
  if (setup.help) {
    process.stdout.write(RESET_HELP);
    return EXIT_OK;
  }
  const { key, config, json, connection } = setup;
  try {
    const rules = knownRules(config);
    let deleted = 0;
    for (const known of rules) {
      for (const name of redisKeys(config, key, known.resolved)) {
        deleted += (await connection.client.exists(name)) ? 1 : 0;
      }
      await limiterFor(config, connection, known.options).reset(key);
    }
    const names = rules.map((known) => known.resolved.name);
    if (json) {
      process.stdout.write(
        `${JSON.stringify({ key, prefix: config.prefix, store: connection.label, rules: names, deletedKeys: deleted })}\n`,
      );
    } else {
      process.stdout.write(
        `reset ${JSON.stringify(key)} under ${names.length} rule${names.length === 1 ? '' : 's'} (${names.join(', ')}): ${deleted} Redis key${deleted === 1 ? '' : 's'} deleted\n`,
      );
    }
    return EXIT_OK;
  } finally {
    await connection.close();
  }
}
