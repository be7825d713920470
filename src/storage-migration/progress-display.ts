import cliProgress from 'cli-progress';

/** What a long storage command reports as it goes. */
export interface CopyProgress {
  /** `total` objects to go through, `done` of them already done before this run. */
  start(total: number, done: number): void;
  /** One more object done, of `bytes` bytes. */
  advance(bytes: number): void;
  end(): void;
}

/** Without a terminal (a log, CI), one line per this many objects. */
export const LINE_EVERY = 100;

function mebibytes(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/** On a terminal: cli-progress's bar (the one the upload client draws), redrawn in place on `out`. */
function terminalBar(out: NodeJS.WritableStream): CopyProgress {
  const bar = new cliProgress.SingleBar(
    { stream: out, hideCursor: true, barsize: 30, format: '{bar} {percentage}% {value}/{total} objects, {copied} copied' },
    cliProgress.Presets.shades_classic,
  );
  let bytes = 0;
  return {
    start: (total, done) => bar.start(total, done, { copied: mebibytes(0) }),
    advance(size) {
      bytes += size;
      bar.increment(1, { copied: mebibytes(bytes) });
    },
    end: () => bar.stop(),
  };
}

/** Anywhere else: a plain line per LINE_EVERY objects and one at the end, so logs stay readable. */
function plainLines(out: NodeJS.WritableStream): CopyProgress {
  let total = 0;
  let done = 0;
  let bytes = 0;
  const line = () => `storage: ${done}/${total} objects, ${mebibytes(bytes)} copied\n`;
  return {
    start(objects, already) {
      total = objects;
      done = already;
      out.write(`storage: ${objects} objects to copy, ${already} copied before\n`);
    },
    advance(size) {
      done += 1;
      bytes += size;
      if (done % LINE_EVERY === 0) out.write(line());
    },
    end: () => out.write(line()),
  };
}

/** Progress on `out` (stderr: stdout carries the command's JSON summary). */
export function progressDisplay(out: NodeJS.WritableStream & { isTTY?: boolean }): CopyProgress {
  return out.isTTY ? terminalBar(out) : plainLines(out);
}
