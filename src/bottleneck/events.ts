/**
 * Bottleneck's emitter (`Bottleneck.Events`): it installs `on`, `once` and `removeAllListeners`
 * on the object it serves, and `trigger` awaits every listener and answers the first value one
 * returned — how a `failed` listener asks for a retry. A listener that throws emits `error`.
 */

type Listener = (...args: never[]) => unknown;

interface Entry {
  readonly cb: Listener;
  status: 'many' | 'once' | 'none';
}

/** The methods an Events installs on its instance. */
export interface Emitting {
  on(name: string, cb: Listener): this;
  once(name: string, cb: Listener): this;
  removeAllListeners(name?: string | null): void;
}

export class Events {
  private events: Record<string, Entry[]> = {};

  constructor(private readonly instance: object) {
    const target = instance as Partial<Emitting>;
    if (target.on != null || target.once != null || target.removeAllListeners != null) {
      throw new Error('An Emitter already exists for this object');
    }
    target.on = (name: string, cb: Listener) => this.add(name, 'many', cb);
    target.once = (name: string, cb: Listener) => this.add(name, 'once', cb);
    target.removeAllListeners = (name?: string | null) => {
      if (name == null) this.events = {};
      else delete this.events[name];
    };
  }

  private add(name: string, status: 'many' | 'once', cb: Listener) {
    const entries = this.events[name] ?? [];
    entries.push({ cb, status });
    this.events[name] = entries;
    return this.instance as never;
  }

  listenerCount(name: string): number {
    return this.events[name]?.length ?? 0;
  }

  /** Calls every listener of `name`; answers the first value (not null or undefined) one returned. */
  async trigger(name: string, ...args: unknown[]): Promise<unknown> {
    if (name !== 'debug') void this.trigger('debug', `Event triggered: ${name}`, args);
    const entries = this.events[name];
    if (entries === undefined) return undefined;
    const live = entries.filter((entry) => entry.status !== 'none');
    this.events[name] = live;
    const answers = await Promise.all(
      live.map(async (entry) => {
        if (entry.status === 'none') return undefined;
        if (entry.status === 'once') entry.status = 'none';
        try {
          return await (entry.cb as (...a: unknown[]) => unknown)(...args);
        } catch (error) {
          if (name !== 'error') void this.trigger('error', error);
          return null;
        }
      }),
    );
    return answers.find((answer) => answer != null);
  }
}
