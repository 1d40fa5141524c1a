/**
 * Client addresses as rate-limit keys. IPv4 addresses are kept as they are; IPv4-mapped IPv6
 * addresses (`::ffff:192.0.2.1`, what a dual-stack socket reports) become the IPv4 address, so
 * one client has one key whichever stack it came in on; other IPv6 addresses are grouped by a
 * prefix (default /64, one customer's subnet) so a host cannot rotate through its own subnet.
 */

// Node's own address grammar (lib/internal/net.js), in Web-standard code: this module runs
// wherever the fetch guard does, without `node:net`.
const V4_SEG = '(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])';
const V4 = `(?:${V4_SEG}\\.){3}${V4_SEG}`;
const V6_SEG = '(?:[0-9a-fA-F]{1,4})';
const IPV4 = new RegExp(`^${V4}$`);
const IPV6 = new RegExp(
  '^(?:' +
    `(?:${V6_SEG}:){7}(?:${V6_SEG}|:)|` +
    `(?:${V6_SEG}:){6}(?:${V4}|:${V6_SEG}|:)|` +
    `(?:${V6_SEG}:){5}(?::${V4}|(?::${V6_SEG}){1,2}|:)|` +
    `(?:${V6_SEG}:){4}(?:(?::${V6_SEG}){0,1}:${V4}|(?::${V6_SEG}){1,3}|:)|` +
    `(?:${V6_SEG}:){3}(?:(?::${V6_SEG}){0,2}:${V4}|(?::${V6_SEG}){1,4}|:)|` +
    `(?:${V6_SEG}:){2}(?:(?::${V6_SEG}){0,3}:${V4}|(?::${V6_SEG}){1,5}|:)|` +
    `(?:${V6_SEG}:){1}(?:(?::${V6_SEG}){0,4}:${V4}|(?::${V6_SEG}){1,6}|:)|` +
    `(?::(?:(?::${V6_SEG}){0,5}:${V4}|(?::${V6_SEG}){1,7}|:))` +
    ')$',
);

/** Whether `text` is a dotted-quad IPv4 address (as `node:net` `isIPv4`). */
export function isIPv4(text: string): boolean {
  return IPV4.test(text);
}

/** Whether `text` is an IPv6 address without a zone index. */
function isIPv6(text: string): boolean {
  return IPV6.test(text);
}

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

/** An IPv4 address as two 16-bit groups, so that prefixes of both families compare the same way. */
export function ipv4Groups(text: string): number[] {
  const [a = 0, b = 0, c = 0, d = 0] = text.split('.').map(Number);
  return [(a << 8) | b, (c << 8) | d];
}

/** `groups` with every bit past the first `bits` cleared. */
export function maskGroups(groups: readonly number[], bits: number): number[] {
  return groups.map((group, index) => {
    const kept = Math.min(16, Math.max(0, bits - index * 16));
    return kept === 0 ? 0 : group & ((0xffff << (16 - kept)) & 0xffff);
  });
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
  return `${formatIPv6(maskGroups(groups, subnet))}/${subnet}`;
}
