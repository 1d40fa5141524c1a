/**
 * Bottleneck.Batcher: collects `add`ed items and emits them as one `batch` when `maxSize` items
 * are in, or `maxTime` ms after the first; each `add` resolves when its batch is emitted.
 */
import { type Emitting, Events } from './events.js';

export interface Batcher extends Emitting {}

/**
 * Items in batches: by count, or by time since the first.
 * @example
 * const batcher = new Bottleneck.Batcher({ maxSize: 100, maxTime: 1000 });
 * batcher.on('batch', (rows) => insertRows(rows));
 * await batcher.add(row);
 */
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: Events installs on/once/removeAllListeners.
export class Batcher {
  readonly Events: Events;
  maxTime: number | null;
  maxSize: number | null;
  private items: unknown[] = [];
  private flushed!: Promise<void>;
  private release!: () => void;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly PromiseClass: PromiseConstructor;

  constructor(
    options: { maxTime?: number | null; maxSize?: number | null; Promise?: PromiseConstructor } = {},
  ) {
    this.maxTime = options.maxTime ?? null;
    this.maxSize = options.maxSize ?? null;
    this.Events = new Events(this);
    this.PromiseClass = options.Promise ?? Promise;
    this.reset();
  }

  add(data: unknown): Promise<void> {
    this.items.push(data);
    const flushed = this.flushed;
    if (this.items.length === this.maxSize) this.flush();
    else if (this.maxTime != null && this.items.length === 1) {
      this.timer = setTimeout(() => this.flush(), this.maxTime);
    }
    return flushed;
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.release();
    void this.Events.trigger('batch', this.items);
    this.items = [];
    this.reset();
  }

  private reset(): void {
    this.flushed = new this.PromiseClass<void>((resolve) => {
      this.release = resolve;
    });
  }
}
