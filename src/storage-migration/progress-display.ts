/** What a long storage command reports as it goes. */
export interface CopyProgress {
  /** `total` objects to go through, `done` of them already done before this run. */
  start(total: number, done: number): void;
  /** One more object done, of `bytes` bytes. */
  advance(bytes: number): void;
  end(): void;
}

/** On a terminal, the bar is redrawn at most this often. */
const REDRAW_MS = 100;
const BAR_WIDTH = 30;
/** Without a terminal (a log, CI), one line per this many objects. */
export const LINE_EVERY = 100;

function mebibytes(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/**
 * Progress on `out` (stderr: stdout carries the command's JSON summary). A terminal gets one line
 * redrawn in place, `[#####-----] 12/40 objects, 3.2 MiB copied`; anything else gets a plain line per
 * LINE_EVERY objects and one at the end, so logs stay readable.
 */
export function progressDisplay(out: NodeJS.WritableStream & { isTTY?: boolean }): CopyProgress {
  let total = 0;
  let done = 0;
  let bytes = 0;
  let lastDraw = 0;
  const line = () => `${done}/${total} objects, ${mebibytes(bytes)} copied`;
  const draw = (force: boolean) => {
    const now = Date.now();
    if (!force && now - lastDraw < REDRAW_MS) return;
    lastDraw = now;
    const filled = total === 0 ? BAR_WIDTH : Math.round((done / total) * BAR_WIDTH);
    out.write(`\r[${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}] ${line()}\x1b[K`);
  };
  return {
    start(objects, already) {
      total = objects;
      done = already;
      if (out.isTTY) draw(true);
      else out.write(`storage: ${objects} objects to copy, ${already} copied before\n`);
    },
    advance(size) {
      done += 1;
      bytes += size;
      if (out.isTTY) draw(false);
      else if (done % LINE_EVERY === 0) out.write(`storage: ${line()}\n`);
    },
    end() {
      if (out.isTTY) {
        draw(true);
        out.write('\n');
      } else out.write(`storage: ${line()}\n`);
    },
  };
}
