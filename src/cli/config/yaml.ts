/** YAML text to a value, through the optional `yaml` package; errors name the file. */
import { RuntimeFailure } from '../args.js';
import { ConfigError } from './check.js';

/** Parses `text` read from `file`; `missing` says what to do when `yaml` is not installed. */
export async function parseYaml(text: string, file: string, missing: string): Promise<unknown> {
  let yaml: typeof import('yaml');
  try {
    yaml = await import('yaml');
  } catch {
    throw new RuntimeFailure(`${file}: ${missing}`);
  }
  try {
    return yaml.parse(text, { prettyErrors: true });
  } catch (error) {
    throw new ConfigError(`${file}: invalid YAML: ${(error as Error).message.split('\n')[0]}`);
  }
}
