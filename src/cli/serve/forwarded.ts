/**
 * The proxy headers the upstream sees are the gateway's. A client that is not a trusted proxy
 * could otherwise forge its address, scheme or host (or a rewritten path) for every upstream
 * framework that reads them: its own versions are dropped and set afresh. A trusted proxy's are
 * kept and appended to, as the hop in front of the gateway wrote them.
 */

import type { IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import { BlockList, isIP } from 'node:net';

/** Headers some upstream framework reads as the client's address, scheme, host or original path. */
const FORGEABLE = new Set([
  'forwarded',
  'x-real-ip',
  'x-client-ip',
  'true-client-ip',
  'cf-connecting-ip',
  'fastly-client-ip',
  'x-cluster-client-ip',
  'x-envoy-external-address',
  'x-rewrite-url',
  'x-host',
]);
const FORGEABLE_PREFIXES = ['x-forwarded-', 'x-original-'];

/** proxy-addr's names for address ranges, as Fastify's trustProxy accepts them. */
const NAMED_RANGES: Record<string, readonly string[]> = {
  loopback: ['127.0.0.1/8', '::1/128'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
};

/** Whether the gateway's direct peer is a trusted proxy, read the way Fastify reads trustProxy. */
export function createPeerTrust(trustProxy: boolean | number | string): (address: string) => boolean {
  if (typeof trustProxy === 'boolean') return () => trustProxy;
  // A hop count trusts that many proxies in front of the gateway, the nearest first.
  if (typeof trustProxy === 'number') return () => trustProxy > 0;
  const list = new BlockList();
  for (const entry of trustProxy
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean)) {
    for (const range of NAMED_RANGES[entry] ?? [entry]) {
      const [address = '', bits] = range.split('/');
      const type = isIP(address) === 6 ? 'ipv6' : 'ipv4';
      if (isIP(address) === 0) continue;
      if (bits === undefined) list.addAddress(address, type);
      else list.addSubnet(address, Number(bits), type);
    }
  }
  return function isTrustedPeer(address) {
    const plain = address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
    const type = isIP(plain) === 6 ? 'ipv6' : 'ipv4';
    return isIP(plain) !== 0 && list.check(plain, type);
  };
}

/** Sets X-Forwarded-For/-Proto/-Host on `headers` (the request's end-to-end headers). */
export function setForwarded(
  incoming: IncomingMessage,
  headers: OutgoingHttpHeaders,
  trusted: boolean,
): void {
  const client = incoming.socket.remoteAddress ?? '';
  if (trusted) {
    const forwarded = incoming.headers['x-forwarded-for'];
    headers['x-forwarded-for'] = forwarded ? `${forwarded}, ${client}` : client;
  } else {
    for (const name of Object.keys(headers)) {
      if (FORGEABLE.has(name) || FORGEABLE_PREFIXES.some((prefix) => name.startsWith(prefix))) {
        delete headers[name];
      }
    }
    headers['x-forwarded-for'] = client;
  }
  headers['x-forwarded-proto'] ??= 'http';
  if (incoming.headers.host !== undefined) headers['x-forwarded-host'] ??= incoming.headers.host;
}
