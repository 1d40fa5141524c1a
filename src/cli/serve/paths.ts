/**
 * The one spelling of a request path the gateway matches routes, skips and costs on, so that
 * `/LOGIN`, `/login/`, `//login`, `/./login`, `/a/../login` and `/%6Cogin` are all `/login`:
 * escapes of unreserved characters decoded (RFC 3986 §6.2.2.2), other escapes in upper case,
 * `//` merged, `.` and `..` resolved (never above `/`). A path that has no one spelling (an
 * encoded `/`, `\` or NUL inside a segment, a raw `\`, a bad escape, bytes outside visible
 * ASCII) is refused rather than guessed at, since the upstream may read it another way.
 */

/** A request target, ready for routing. */
export interface NormalizedTarget {
  /** The normalized path without a trailing `/` (the root stays `/`): what routes match. */
  readonly path: string;
  /** The normalized path as forwarded: the original's trailing `/` kept, then the query as sent. */
  readonly forward: string;
}

const UNRESERVED = /[A-Za-z0-9\-._~]/;
/** Visible ASCII except `\`, `#` (a fragment is never part of a request target) and `%` (checked apart). */
const PATH_CHAR = /^[!$&'()*+,\-./0-9:;=@A-Z[\]^_`a-z{|}~]$/;
/** A path already in normal form (no escapes, no empty, `.` or `..` segments), but for a trailing `/`. */
const NORMAL = /^(?:\/(?!\.\.?(?:\/|$))[A-Za-z0-9\-._~!$&'()*+,;=:@]+)*\/?$/;
/** Escapes that would change how the path splits or ends: `/`, `\`, NUL. */
const REFUSED_ESCAPES = new Set(['2F', '5C', '00']);

/**
 * The normalized form of a request target (`req.url`), or `undefined` when it cannot be
 * normalized (the gateway answers 400 and forwards nothing).
 */
export function normalizeTarget(url: string | undefined): NormalizedTarget | undefined {
  if (url === undefined || !url.startsWith('/')) return undefined;
  const queryAt = url.indexOf('?');
  const rawPath = queryAt < 0 ? url : url.slice(0, queryAt);
  const query = queryAt < 0 ? '' : url.slice(queryAt);
  // Most paths are already normal: one test instead of a scan.
  if (NORMAL.test(rawPath)) {
    const path = rawPath.length > 1 && rawPath.endsWith('/') ? rawPath.slice(0, -1) : rawPath;
    return { path, forward: url };
  }
  const decoded = decodeUnreserved(rawPath);
  if (decoded === undefined) return undefined;
  const segments: string[] = [];
  for (const segment of decoded.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') segments.pop();
    else segments.push(segment);
  }
  const path = `/${segments.join('/')}`;
  const trailing = path !== '/' && /\/\.{0,2}$/.test(decoded) ? '/' : '';
  return { path, forward: `${path}${trailing}${query}` };
}

/** Decodes escapes of unreserved characters and upper-cases the rest; undefined if any is refused. */
function decodeUnreserved(path: string): string | undefined {
  let out = '';
  for (let i = 0; i < path.length; i++) {
    const char = path[i] as string;
    if (char !== '%') {
      if (!PATH_CHAR.test(char)) return undefined;
      out += char;
      continue;
    }
    const hex = path.slice(i + 1, i + 3).toUpperCase();
    if (!/^[0-9A-F]{2}$/.test(hex) || REFUSED_ESCAPES.has(hex)) return undefined;
    const decoded = String.fromCharCode(Number.parseInt(hex, 16));
    out += UNRESERVED.test(decoded) ? decoded : `%${hex}`;
    i += 2;
  }
  return out;
}

/** The 400 body of a path that cannot be normalized. */
export const MALFORMED_PATH_PROBLEM = JSON.stringify({
  type: 'about:blank',
  title: 'Bad Request',
  status: 400,
  detail: 'the request path cannot be normalized',
});
