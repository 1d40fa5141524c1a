/**
 * Express and Fastify are optional peers: `floodgate` and every adapter entry point must load
 * without them (adapters use their types only), and adapters stay thin: the key, header and
 * body logic lives in the neutral modules.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));
const forbid = fileURLToPath(new URL('./support/forbid-frameworks.mjs', import.meta.url));

function importWithoutFrameworks(code: string) {
  return run(process.execPath, ['--import', 'tsx', '--import', forbid, '--input-type=module', '-e', code], {
    cwd: root,
  });
}

describe('optional framework peers', () => {
  it('loads floodgate and all four adapter entry points without loading express or fastify', async () => {
    const { stdout } = await importWithoutFrameworks(`
      const modules = await Promise.all(['index', 'http/express', 'http/fastify', 'http/node', 'http/fetch']
        .map((name) => import('./src/' + name + '.ts')));
      const [core, ex, fa, no, fe] = modules;
      console.log([typeof core.createLimiter, typeof ex.rateLimit, typeof fa.floodgate, typeof no.createHttpGuard, typeof fe.createFetchGuard].join(' '));
    `);
    expect(stdout.trim()).toBe('function function function function function');
    // The hook does bite: importing a framework directly fails.
    await expect(importWithoutFrameworks(`await import('express')`)).rejects.toThrow(
      /framework loaded: express/,
    );
  });

  it('adapters import frameworks as types only and carry no key, header or body logic', () => {
    for (const name of ['express', 'fastify', 'node', 'fetch']) {
      const source = readFileSync(`${root}src/http/${name}.ts`, 'utf8')
        .replace(/\/\*[\s\S]*?\*\//g, '')
        .replace(/^\s*\/\/.*$/gm, '');
      const clauses = [...source.matchAll(/^import ([^;]*?) from '(?:express|fastify)'/gm)].map((m) => m[1]);
      expect(clauses.length).toBe(name === 'express' || name === 'fastify' ? 1 : 0);
      for (const clause of clauses) {
        expect(clause?.startsWith('type '), `${name}.ts imports a framework at run time`).toBe(true);
      }
      expect(source).not.toMatch(/RateLimit-|Retry-After|quota-exceeded|x-api-key|createHmac|no-store/i);
    }
  });
});
