/**
 * The Node `ServerResponse` under the Node-family adapters (Express, node:http, Koa, Fastify,
 * NestJS): its headers as a HeaderTarget, and the last moment they can change, when its head
 * is written.
 */
import type { HeaderTarget } from './headers.js';
import type { ResponseHead } from './outcome.js';

type FieldValue = number | string | readonly string[];

/** What the adapters use of a Node response (`ServerResponse`). */
export interface NodeResponse {
  readonly statusCode: number;
  readonly writableFinished: boolean;
  /** True once the response has emitted 'close' (a finished, cut or failed response alike). */
  readonly closed: boolean;
  readonly headersSent: boolean;
  addTrailers(headers: Record<string, string> | readonly [string, string][]): void;
  once(event: 'close', listener: () => void): unknown;
  getHeader(name: string): FieldValue | undefined;
  setHeader(name: string, value: FieldValue): unknown;
  removeHeader(name: string): void;
  appendHeader(name: string, value: FieldValue): unknown;
  writeHead(statusCode: number, ...rest: unknown[]): unknown;
}

function headerText(value: FieldValue | undefined): string | undefined {
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value.join(', ') : String(value);
}

type NodeHeaderSource = {
  getHeader(name: string): FieldValue | undefined;
  setHeader(name: string, value: string): unknown;
};

/** A class rather than an object of two closures: one small object per response. */
class NodeHeaders implements HeaderTarget {
  readonly #res: NodeHeaderSource;
  constructor(res: NodeHeaderSource) {
    this.#res = res;
  }
  get(name: string): string | undefined {
    return headerText(this.#res.getHeader(name));
  }
  set(name: string, value: string): void {
    this.#res.setHeader(name, value);
  }
}

/** Adapts a Node-style response (`getHeader`/`setHeader`, shared by Express and node:http) to a HeaderTarget. */
export function nodeHeaderTarget(res: NodeHeaderSource): HeaderTarget {
  return new NodeHeaders(res);
}

/**
 * Runs `change` once, just before `raw`'s final head is written, with the head and its headers
 * (still writable). `writeHead` is where every head passes: the response calls it itself for an
 * implicit head (a first `write` or `end`, as Express's `send`), and Fastify calls it with the
 * reply's headers, which are merged into the response first (as Node would) so `change` sees them.
 */
export function beforeHead(
  raw: NodeResponse,
  change: (head: ResponseHead, target: HeaderTarget) => void,
): void {
  const writeHead = raw.writeHead;
  let changed = false;
  raw.writeHead = function writeHeadChanged(statusCode: number, ...rest: unknown[]) {
    // An informational (1xx) head is followed by the final one; a head sent already cannot change.
    if (changed || statusCode < 200 || raw.headersSent) return writeHead.call(raw, statusCode, ...rest);
    changed = true;
    const reason = typeof rest[0] === 'string' ? rest[0] : undefined;
    const fields = reason === undefined ? (rest[1] ?? rest[0]) : rest[1];
    if (fields !== undefined && fields !== null) mergeFields(raw, fields);
    const target = nodeHeaderTarget(raw);
    change({ status: statusCode, field: (name) => target.get(name) }, target);
    return reason === undefined ? writeHead.call(raw, statusCode) : writeHead.call(raw, statusCode, reason);
  };
}

/** `writeHead`'s headers, set on the response as Node merges them: an object's replace, a flat array's are appended afresh. */
function mergeFields(raw: NodeResponse, fields: unknown): void {
  if (Array.isArray(fields)) {
    for (let i = 0; i < fields.length; i += 2) raw.removeHeader(String(fields[i]));
    for (let i = 0; i < fields.length; i += 2) {
      if (fields[i]) raw.appendHeader(String(fields[i]), fields[i + 1] as FieldValue);
    }
    return;
  }
  for (const [name, value] of Object.entries(fields as Record<string, FieldValue>)) {
    if (name) raw.setHeader(name, value);
  }
}
