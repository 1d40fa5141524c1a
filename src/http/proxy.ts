/**
 * Which address is the client's, for adapters that see only a socket (node:http) or nothing at
 * all (Fetch API). Express and Fastify have their own trust-proxy settings and use those.
 *
 * `X-Forwarded-For` is written by whoever sends the request, so it is believed only as far as
 * the chain of trusted proxies reaches: walking from the nearest hop (the socket peer) outwards,
 * each hop is believed only if the hop before it was a trusted proxy.
 */
import { describe } from '../describe.js';
import { canonicalIp, ipv4Groups, maskGroups, parseIPv6 } from './ip.js';

/**
 * `false` (default): the socket's peer is the client, `X-Forwarded-For` is ignored.
 * `true`: every hop is trusted, the left-most `X-Forwarded-For` entry is the client (only when
 * every path to the server goes through a proxy that overwrites the header).
 * A number `n`: the nearest `n` hops are trusted proxies.
 * An address, CIDR or name (`'loopback'`, `'linklocal'`, `'uniquelocal'`), or a list of them:
 * hops at those addresses are trusted proxies.
 */
export type TrustProxy = boolean | number | string | readonly string[];

/** A resolved trust policy: given the hops nearest first, the index of the client. */
export type ProxyTrust = (hops: readonly (string | undefined)[]) => number;

const NAMED_RANGES: Record<string, readonly string[]> = {
  loopback: ['127.0.0.0/8', '::1/128'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
};

const MAX_HOPS = 64;

/** Validates a `trustProxy` option once, at construction. */
export function parseTrustProxy(value: unknown, option = 'trustProxy'): ProxyTrust {
  if (value === undefined || value === false) return () => 0;
  if (value === true) return (hops) => hops.length - 1;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value) || value < 0 || value > MAX_HOPS) {
      throw new RangeError(
        `${option}: ${describe(value)} must be a whole number of hops from 0 to ${MAX_HOPS}`,
      );
    }
    return (hops) => Math.min(value, hops.length - 1);
  }
  const entries = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(entries) || entries.length === 0) {
    throw new TypeError(
      `${option}: expected false, true, a number of hops, or addresses/CIDRs/'loopback'/'linklocal'/'uniquelocal', got ${describe(value)}`,
    );
  }
  const trusted: Range[] = [];
  for (const entry of entries) {
    for (const range of NAMED_RANGES[entry as string] ?? [entry]) trusted.push(parseRange(range, option));
  }
  return (hops) => {
    let index = 0;
    while (index < hops.length - 1 && isTrusted(trusted, hops[index])) index++;
    return index;
  };
}

/** A trusted network: its address family, its masked 16-bit groups and its prefix length. */
interface Range {
  readonly ipv6: boolean;
  readonly network: readonly number[];
  readonly bits: number;
}

/** An address in canonical form (see canonicalIp) as its family and 16-bit groups. */
function groupsOf(address: string): { ipv6: boolean; groups: number[] } {
  const ipv6 = address.includes(':');
  return { ipv6, groups: ipv6 ? (parseIPv6(address) as number[]) : ipv4Groups(address) };
}

function parseRange(range: unknown, option: string): Range {
  const text = typeof range === 'string' ? range : '';
  const slash = text.indexOf('/');
  const address = canonicalIp(slash < 0 ? text : text.slice(0, slash));
  const ipv6 = address?.includes(':') === true;
  const width = ipv6 ? 128 : 32;
  const bits = slash < 0 ? width : Number(text.slice(slash + 1));
  if (address === undefined || !Number.isInteger(bits) || bits < 0 || bits > width) {
    throw new RangeError(
      `${option}: ${describe(range)} is not an IP address, a CIDR such as '10.0.0.0/8', or one of 'loopback', 'linklocal', 'uniquelocal'`,
    );
  }
  return { ipv6, network: maskGroups(groupsOf(address).groups, bits), bits };
}

function isTrusted(ranges: readonly Range[], hop: string | undefined): boolean {
  const address = canonicalIp(hop);
  if (address === undefined) return false;
  const { ipv6, groups } = groupsOf(address);
  return ranges.some(
    (range) =>
      range.ipv6 === ipv6 && maskGroups(groups, range.bits).every((group, i) => group === range.network[i]),
  );
}

/**
 * The client's address: the socket peer, or an `X-Forwarded-For` entry when the hops in
 * between are trusted. `forwardedFor` is the header as received (repeated lines joined by `,`).
 */
export function clientAddress(
  peer: string | undefined,
  forwardedFor: string | undefined,
  trust: ProxyTrust,
): string | undefined {
  const hops: (string | undefined)[] = [peer];
  if (forwardedFor !== undefined) {
    const entries = forwardedFor.split(',');
    for (let i = entries.length - 1; i >= 0 && hops.length <= MAX_HOPS; i--) {
      hops.push((entries[i] as string).trim());
    }
  }
  return hops[trust(hops)];
}
