import cliProgress from 'cli-progress';

/** Progress display of a run: an overall bar, and one bar per large file while it uploads. Draws on stderr. */
export interface Progress {
  start(file: string, size: number): FileProgress;
  /** A line above the bars. */
  log(line: string): void;
  stop(): void;
}

export interface FileProgress {
  update(sent: number): void;
  done(): void;
}

/** Files from this size get their own bar. */
export const LARGE_FILE_BYTES = 1024 * 1024;

export function barProgress(totalBytes: number, fileCount: number): Progress {
  const bars = new cliProgress.MultiBar(
    {
      stream: process.stderr,
      clearOnComplete: false,
      hideCursor: true,
      barsize: 20,
      format: '{name} {bar} {percentage}% {done} {detail}',
      formatValue: (value, _options, type) => (type === 'value' || type === 'total' ? size(value) : String(value)),
    },
    cliProgress.Presets.shades_classic,
  );
  const overall = bars.create(totalBytes, 0, { name: pad('all files'), done: `${size(0)}/${size(totalBytes)}`, detail: `0/${fileCount} files` });
  let finishedBytes = 0;
  let finishedFiles = 0;
  const inFlight = new Map<object, number>();
  const redraw = () => {
    const bytes = finishedBytes + [...inFlight.values()].reduce((sum, value) => sum + value, 0);
    overall.update(Math.min(bytes, totalBytes), { done: `${size(bytes)}/${size(totalBytes)}`, detail: `${finishedFiles}/${fileCount} files` });
  };
  return {
    start(file, fileSize) {
      const token = {};
      inFlight.set(token, 0);
      const bar = fileSize >= LARGE_FILE_BYTES ? bars.create(fileSize, 0, { name: pad(file), done: `${size(0)}/${size(fileSize)}`, detail: 'uploading' }) : undefined;
      return {
        update(sent) {
          const fileBytes = Math.min(sent, fileSize);
          inFlight.set(token, fileBytes);
          bar?.update(fileBytes, { done: `${size(fileBytes)}/${size(fileSize)}` });
          redraw();
        },
        done() {
          inFlight.delete(token);
          finishedBytes += fileSize;
          finishedFiles += 1;
          if (bar) bars.remove(bar);
          redraw();
        },
      };
    },
    log: (line) => bars.log(`${line}\n`),
    stop: () => {
      bars.update(); // flushes lines logged since the last redraw, which stop() alone drops
      bars.stop();
    },
  };
}

/** No display: when stderr is not a terminal, or with --json. */
export function silentProgress(): Progress {
  return { start: () => ({ update() {}, done() {} }), log() {}, stop() {} };
}

function pad(name: string): string {
  const short = name.length > 20 ? `…${name.slice(-19)}` : name;
  return short.padEnd(20);
}

function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
