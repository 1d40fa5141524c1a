// Builds the ESM and CommonJS distributions with tsc alone (no bundler), so that
// `import` and `require` consumers both get real files and matching type declarations.
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';

const tsc = (args) =>
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', ...args], { stdio: 'inherit' });

rmSync('dist', { recursive: true, force: true });
tsc(['-p', 'tsconfig.build.json']);
tsc([
  '-p',
  'tsconfig.build.json',
  '--module',
  'commonjs',
  '--moduleResolution',
  'node10',
  '--outDir',
  'dist/cjs',
]);
// Each output folder declares its own module type, whatever the root package.json says.
writeFileSync('dist/esm/package.json', '{ "type": "module" }\n');
writeFileSync('dist/cjs/package.json', '{ "type": "commonjs" }\n');
