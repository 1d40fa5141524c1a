/** A simulation's future events in time order (a binary min-heap); equal times run in the order added. */

interface Entry<T> {
  readonly at: number;
  readonly order: number;
  readonly event: T;
}

export interface EventQueue<T> {
  readonly size: number;
  push(at: number, event: T): void;
  /** The earliest event, removed; undefined when none is left. */
  pop(): { at: number; event: T } | undefined;
}

export function eventQueue<T>(): EventQueue<T> {
  const heap: Entry<T>[] = [];
  let added = 0;
  const before = (a: Entry<T>, b: Entry<T>) => a.at < b.at || (a.at === b.at && a.order < b.order);

  function swap(i: number, j: number): void {
    const held = heap[i] as Entry<T>;
    heap[i] = heap[j] as Entry<T>;
    heap[j] = held;
  }

  return {
    get size() {
      return heap.length;
    },
    push(at, event) {
      heap.push({ at, order: added++, event });
      let i = heap.length - 1;
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if (!before(heap[i] as Entry<T>, heap[parent] as Entry<T>)) break;
        swap(i, parent);
        i = parent;
      }
    },
    pop() {
      const top = heap[0];
      if (top === undefined) return undefined;
      const last = heap.pop() as Entry<T>;
      if (heap.length > 0) {
        heap[0] = last;
        let i = 0;
        for (;;) {
          const left = 2 * i + 1;
          const right = left + 1;
          let least = i;
          if (left < heap.length && before(heap[left] as Entry<T>, heap[least] as Entry<T>)) least = left;
          if (right < heap.length && before(heap[right] as Entry<T>, heap[least] as Entry<T>)) least = right;
          if (least === i) break;
          swap(i, least);
          i = least;
        }
      }
      return { at: top.at, event: top.event };
    },
  };
}
