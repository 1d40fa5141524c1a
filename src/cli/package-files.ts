/**
 * Files shipped beside the code (package.json, the .proto files), found from the running
 * command: src/cli/main.ts in the repository, dist/esm/cli/main.js in the package
 * (import.meta is unavailable in the CommonJS build).
 */
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The package's root directory, or undefined when the command runs from somewhere else. */
export function packageRoot(): string | undefined {
  for (const path of ['../../', '../../../']) {
    try {
      const root = new URL(path, pathToFileURL(realpathSync(process.argv[1] ?? '.')));
      const manifest = new URL('package.json', root);
      if (!existsSync(manifest)) continue;
      const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string };
      if (pkg.name === 'floodgate') return fileURLToPath(root);
    } catch {
      // try the next layout (src/cli or dist/esm/cli)
    }
  }
  return undefined;
}
