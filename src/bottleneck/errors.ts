/** Bottleneck's error class: what its users catch and test with `instanceof`. */

/** Rejections of floodgate/bottleneck's own making (drops, timeouts, bad job options). */
export class BottleneckError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BottleneckError';
  }
}
