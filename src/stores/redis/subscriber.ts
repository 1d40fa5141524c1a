/**
 * Listening to a pub/sub channel on a connection of its own, duplicated from the user's client
 * (a subscribed connection can run no other command): ioredis, iovalkey and node-redis, clients
 * and clusters, through their public methods only. A `ScriptRunner` has none: then there is no
 * push, and the scheduler relies on its periodic re-check alone.
 */

/** Subscribes; resolves with the function that unsubscribes and closes the connection. */
export type Subscribe = (
  channel: string,
  onMessage: (message: string) => void,
) => Promise<() => Promise<void>>;

interface Duplicable {
  duplicate(): Subscriber;
}

interface Subscriber {
  on?(event: string, listener: (...args: unknown[]) => void): unknown;
  connect?(): Promise<unknown>;
  subscribe(channel: string, listener?: (message: unknown) => void): Promise<unknown>;
  disconnect?(): unknown;
  quit?(): Promise<unknown>;
  destroy?(): unknown;
}

const has = (value: unknown, name: string): boolean =>
  typeof (value as Record<string, unknown> | null)?.[name] === 'function';

/** The client's way to subscribe, or undefined when it cannot duplicate itself. */
export function subscriberOf(client: unknown): Subscribe | undefined {
  if (!has(client, 'duplicate')) return undefined;
  // ioredis and iovalkey: messages are 'message' events on the subscribed connection.
  if (has(client, 'evalsha')) {
    return async (channel, onMessage) => {
      const connection = (client as Duplicable).duplicate();
      // Its failures are the safety re-check's to cover; an unheard 'error' event would crash.
      connection.on?.('error', () => undefined);
      connection.on?.('message', (from, message) => {
        if (String(from) === channel) onMessage(String(message));
      });
      await connection.subscribe(channel);
      return async () => {
        connection.disconnect?.();
      };
    };
  }
  // node-redis: connect the duplicate, then a listener per channel.
  if (has(client, 'sendCommand')) {
    return async (channel, onMessage) => {
      const connection = (client as Duplicable).duplicate();
      connection.on?.('error', () => undefined);
      await connection.connect?.();
      await connection.subscribe(channel, (message) => onMessage(String(message)));
      return async () => {
        if (connection.destroy !== undefined) connection.destroy();
        else await connection.quit?.();
      };
    };
  }
  return undefined;
}
