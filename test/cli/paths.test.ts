/** The gateway's path normalization, case by case (the gateway tests run it end to end). */
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
});
