/**
 * The request target as the upstream gets it: always origin-form (`/path?query`). An
 * absolute-form target (`http://host/path`, RFC 9112 §3.2.2) is cut to its path and query, so
 * the client cannot choose the path prefix the upstream sees; `*` (asterisk-form) is returned
 * as is for the gateway to answer itself.
 */
const ABSOLUTE_FORM = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;

/** `/path?query`, `*`, or undefined when the target is none of the forms a gateway accepts. */
export function originForm(target: string): string | undefined {
  if (target.startsWith('/') || target === '*') return target;
  if (!ABSOLUTE_FORM.test(target)) return undefined;
  try {
    const url = new URL(target);
    return url.pathname + url.search;
  } catch {
    return undefined;
  }
}
