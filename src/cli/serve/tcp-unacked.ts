/**
 * How many bytes a TCP connection has sent that its peer has not yet acknowledged, as Linux
 * reports them (the `tx_queue` column of /proc/self/net/tcp and tcp6). A peer acknowledges
 * what it has room to receive, so this count falls as the peer's application reads: it is the
 * finest view of a slow reader's progress the kernel gives a process. `undefined` where there is
 * no such table (not Linux) or the connection is not found in it.
 */
import { readFile } from 'node:fs/promises';
import type { Socket } from 'node:net';

/** One read of a table serves every connection looked up within this time (a table lists them all). */
const FRESH_MS = 50;
/** The `st` column of an established connection. */
const ESTABLISHED = '01';

const tables = new Map<string, { at: number; text: Promise<string | undefined> }>();
/** Set once a table cannot be read (no /proc): never tried again. */
let unavailable = false;

export async function unacknowledgedBytes(socket: Socket): Promise<number | undefined> {
  const { localPort, remotePort } = socket;
  if (unavailable || localPort === undefined || remotePort === undefined) return undefined;
  const text = await table(socket.remoteFamily === 'IPv6' ? 'tcp6' : 'tcp');
  if (text === undefined) return undefined;
  // Rows read `sl local_address rem_address st tx_queue:rx_queue ...`, addresses as HEX:PORT.
  const local = `:${hexPort(localPort)}`;
  const remote = `:${hexPort(remotePort)}`;
  let found: number | undefined;
  for (const row of text.split('\n')) {
    const fields = row.trim().split(/\s+/);
    const [, from, to, state, queues] = fields;
    if (state !== ESTABLISHED || !from?.endsWith(local) || !to?.endsWith(remote)) continue;
    // The same pair of ports to another address: the row cannot be told apart, so no answer.
    if (found !== undefined) return undefined;
    found = Number.parseInt(queues?.split(':')[0] ?? '', 16);
  }
  return Number.isNaN(found) ? undefined : found;
}

function table(name: string): Promise<string | undefined> {
  const now = performance.now();
  const cached = tables.get(name);
  if (cached !== undefined && now - cached.at < FRESH_MS) return cached.text;
  const text = readFile(`/proc/self/net/${name}`, 'latin1').catch(() => {
    unavailable = true;
    return undefined;
  });
  tables.set(name, { at: now, text });
  return text;
}

function hexPort(port: number): string {
  return port.toString(16).toUpperCase().padStart(4, '0');
}
