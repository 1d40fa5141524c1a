/**
 * A cap on the requests one client has in flight upstream at once, per gateway process: a
 * client that opens many slow requests holds at most this many upstream connections, so the
 * pool always has room for the others.
 */
export interface ClientSlots {
  /** Takes a slot for `client`; returns its release (idempotent), or undefined when the client is at the cap. */
  acquire(client: string): (() => void) | undefined;
}

export function createClientSlots(max: number): ClientSlots {
  const held = new Map<string, number>();
  return {
    acquire(client) {
      const count = held.get(client) ?? 0;
      if (count >= max) return undefined;
      held.set(client, count + 1);
      let released = false;
      return function release() {
        if (released) return;
        released = true;
        const left = (held.get(client) ?? 1) - 1;
        if (left === 0) held.delete(client);
        else held.set(client, left);
      };
    },
  };
}
