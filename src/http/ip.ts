/**
 * Client addresses as rate-limit keys. IPv4 addresses are kept as they are; IPv4-mapped IPv6
 * addresses (`::ffff:192.0.2.1`, what a dual-stack socket reports) become the IPv4 address, so
 * one client has one key whichever stack it came in on; other IPv6 addresses are grouped by a
 * prefix (default /64, one customer's subnet) so a host cannot rotate through its own subnet.
 */
import { isIPv4, isIPv6 } from 'node:net';

/** Default IPv6 grouping: a /64 is what one customer is typically assigned. */
export const DEFAULT_IPV6_SUBNET = 64;

/** Parses an IPv6 address (zone index allowed and dropped) into its eight 16-bit groups. */
export function parseIPv6(text: string): number[] | undefined {
  const address = text.includes('%') ? text.slice(0, text.indexOf('%')) : text;
  if (!isIPv6(address)) return undefined;
  const [head = '', tail] = address.split('::') as [string, string | undefined];
  const toGroups = (part: string): number[] => {
    if (part === '') return [];
    const groups: number[] = [];
    for (const piece of part.split(':')) {
      if (piece.includes('.')) {
        const [a = 0, b = 0, c = 0, d = 0] = piece.split('.').map(Number);
        groups.push((a << 8) | b, (c << 8) | d);
      } else {
        groups.push(Number.parseInt(piece, 16));
      }
    }
    return groups;
  };
  const first = toGroups(head);
  if (tail === undefined) return first;
  const last = toGroups(tail);
  return [...first, ...new Array<number>(8 - first.length - last.length).fill(0), ...last];
}

/** RFC 5952 text form: lowercase, no leading zeros, the longest run of two or more zero groups as `::`. */
export function formatIPv6(groups: readonly number[]): string {
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < groups.length; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < groups.length && groups[j] === 0) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = groups.map((group) => group.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`;
}

/** The IPv4 address inside an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`), if it is one. */
function mappedIPv4(groups: readonly number[]): string | undefined {
  for (let i = 0; i < 5; i++) if (groups[i] !== 0) return undefined;
  if (groups[5] !== 0xffff) return undefined;
  const high = groups[6] as number;
  const low = groups[7] as number;
  return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
}

/**
 * The canonical form of an address: IPv4 as is, IPv4-mapped IPv6 as IPv4, other IPv6 in RFC 5952
 * form. `undefined` for anything that is not an IP address.
 */
export function canonicalIp(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const address = text.trim();
  if (isIPv4(address)) return address;
  const groups = parseIPv6(address);
  if (groups === undefined) return undefined;
  return mappedIPv4(groups) ?? formatIPv6(groups);
}

/**
 * The rate-limit identity of an address: IPv4 (and IPv4-mapped IPv6) as the address, other IPv6
 * as its `/subnet` network, e.g. `2001:db8:1:2::/64`. `undefined` for anything that is not an IP.
 */
export function ipIdentity(text: string | undefined, subnet = DEFAULT_IPV6_SUBNET): string | undefined {
  if (text === undefined) return undefined;
  const address = text.trim();
  if (isIPv4(address)) return address;
  const groups = parseIPv6(address);
  if (groups === undefined) return undefined;
  const mapped = mappedIPv4(groups);
  if (mapped !== undefined) return mapped;
  const masked = groups.map((group, index) => {
    const bits = Math.min(16, Math.max(0, subnet - index * 16));
    return bits === 0 ? 0 : group & ((0xffff << (16 - bits)) & 0xffff);
  });
  return `${formatIPv6(masked)}/${subnet}`;
}
