/**
 * A store whose client was closed by its owner (quit, disconnect, or never connected) cannot
 * answer again until the application makes a new one: such a failure is not transient, so a
 * check rejects with this error rather than being answered by `onStoreError` indefinitely.
 */
export class StoreClosedError extends Error {
  constructor(kind: string, cause: unknown) {
    super(
      `floodgate: the ${kind} store's client is closed (quit, disconnected for good, or never connected); checks cannot be decided until the store is given an open client`,
      { cause },
    );
    this.name = 'StoreClosedError';
  }
}
