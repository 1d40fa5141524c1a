/** The gateway's path normalization, case by case (the gateway tests run it end to end). */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { normalizeTarget } from '../../src/cli/serve/paths.js';

describe('normalizeTarget', () => {
  it('gives every spelling of a path one form, keeping the trailing slash and query for the upstream', () => {
    const cases: [string, string, string][] = [
      ['/login', '/login', '/login'],
      ['/login/', '/login', '/login/'],
      ['//login', '/login', '/login'],
      ['/./login', '/login', '/login'],
      ['/a/../login', '/login', '/login'],
      ['/../../login', '/login', '/login'],
      ['/%6Cogin', '/login', '/login'],
      ['/%2e%2E/login', '/login', '/login'],
      ['/a/b/..', '/a', '/a/'],
      ['/', '/', '/'],
      ['/..', '/', '/'],
      ['/a%20b', '/a%20b', '/a%20b'],
      ['/a%3f', '/a%3F', '/a%3F'],
      ['/login;x', '/login;x', '/login;x'],
      ['/login?x=1&y=%2F', '/login', '/login?x=1&y=%2F'],
      ['/LOGIN', '/LOGIN', '/LOGIN'],
      ['/.well-known/x', '/.well-known/x', '/.well-known/x'],
      ['/a..b/...', '/a..b/...', '/a..b/...'],
      ['/v1/users/', '/v1/users', '/v1/users/'],
    ];
    for (const [url, path, forward] of cases) {
      expect(normalizeTarget(url), url).toEqual({ path, forward });
    }
  });

  it('refuses what has no one spelling', () => {
    for (const url of [
      undefined,
      '',
      '*',
      '%2Flogin',
      'http://example.com/login',
      '/a%2Fb',
      '/a%2fb',
      '/a%5Cb',
      '/a%00b',
      '/a\\b',
      '/a#b',
      '/a%zz',
      '/a%4',
      '/a%',
      '/a b',
      '/caf\u00e9',
      '/a\u0000b',
    ]) {
      expect(normalizeTarget(url), String(url)).toBeUndefined();
    }
  });

  it('is idempotent, and its paths have no empty, . or .. segments, for any input', () => {
    const chars = fc.constantFrom('/', '.', '%', '2', 'e', 'F', 'a', 'B', '~', '?', ';', '\\', '#', '0');
    fc.assert(
      fc.property(fc.array(chars, { maxLength: 24 }), (list) => {
        const url = `/${list.join('')}`;
        const once = normalizeTarget(url);
        if (once === undefined) return;
        expect(once.path.split('/').slice(1)).not.toContain('.');
        expect(once.path.split('/').slice(1)).not.toContain('..');
        if (once.path !== '/') expect(once.path.split('/').slice(1)).not.toContain('');
        expect(normalizeTarget(once.forward)?.path).toBe(once.path);
      }),
      { numRuns: 2000 },
    );
  });
});
