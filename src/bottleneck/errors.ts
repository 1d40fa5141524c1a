/** Bottleneck's error class: what its users catch and test with `instanceof`. */

/**
 * Rejections of floodgate/bottleneck's own making (drops, timeouts, bad job options).
 * @example
 * limiter.schedule(task).catch((error) => {
 *   if (error instanceof Bottleneck.BottleneckError) console.warn('dropped or timed out:', error.message);
 * });
 */
export class BottleneckError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BottleneckError';
  }
}
