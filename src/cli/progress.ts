/**
 * Progress on stderr for long runs: a line rewritten in place on a terminal, or (with
 * `--progress` when stderr is not a terminal) one line per finished step. Silent otherwise,
 * so piping stdout or stderr never fills logs with progress.
 */

export interface Progress {
  /** Reports `done` of `total` units of the step named `label`. */
  update(label: string, done: number, total: number): void;
  /** Marks the step `label` as finished. */
  step(label: string): void;
  /** Clears the progress line. */
  end(): void;
}

/** Redraws at most this often on a terminal. */
const REDRAW_MS = 100;

export function createProgress(stream: NodeJS.WriteStream, forced: boolean): Progress {
  const tty = stream.isTTY === true;
  const enabled = tty || forced;
  let lastDraw = 0;
  let drawn = false;
  return {
    update(label, done, total) {
      if (!enabled || !tty) return;
      const now = Date.now();
      if (now - lastDraw < REDRAW_MS && done < total) return;
      lastDraw = now;
      const percent = total === 0 ? 100 : Math.floor((done / total) * 100);
      stream.write(`\r\x1b[2K${label} ${percent}% (${done}/${total})`);
      drawn = true;
    },
    step(label) {
      if (!enabled || tty) return;
      stream.write(`${label} done\n`);
    },
    end() {
      if (drawn) stream.write('\r\x1b[2K');
      drawn = false;
    },
  };
}
