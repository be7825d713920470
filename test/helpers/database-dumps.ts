import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { gunzipSync, gzipSync } from 'node:zlib';
import { repo } from './service-process.ts';

// The cli's database commands as a child process, and export files read and rewritten (for refusals).

export interface CliRun { code: number; stdout: string; stderr: string }

/** `node src/cli/main.ts ...args` with exactly `env` (plus PATH and HOME). */
export function runCli(args: string[], env: Record<string, string>): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['src/cli/main.ts', ...args], {
      cwd: repo, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env }, timeout: 240_000, maxBuffer: 16 * 1024 * 1024,
    }, (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }));
  });
}

/** The lines of an export file (gunzipped). */
export async function dumpLines(file: string): Promise<string[]> {
  return gunzipSync(await readFile(file)).toString('utf8').split('\n').filter((line) => line !== '');
}

/** Every line but the header and the end line (which carry the time, server version and digest): the data. */
export async function dumpData(file: string): Promise<string[]> {
  const lines = await dumpLines(file);
  return lines.slice(1, -1);
}

/**
 * The data lines with the rows of each table sorted: what a comparison of two databases' rows
 * needs, as SQL gives rows no order and an export reads them in the order they lie on disk.
 */
export function rowsSortedWithinTables(lines: string[]): string[] {
  const sorted: string[] = [];
  let rows: string[] = [];
  const flush = (): void => {
    sorted.push(...rows.sort());
    rows = [];
  };
  for (const line of lines) {
    if (line.startsWith('{"table":"') || line.startsWith('{"sequences":')) {
      flush();
      sorted.push(line);
    } else {
      rows.push(line);
    }
  }
  flush();
  return sorted;
}

/** Writes `lines` as an intact export file: the end line's digest is computed again, as the service would. */
export async function writeDumpLines(file: string, lines: string[]): Promise<void> {
  const body = lines.slice(0, -1);
  const end = JSON.parse(lines.at(-1)!);
  const hash = createHash('sha256');
  for (const line of body) hash.update(`${line}\n`);
  end.sha256 = hash.digest('hex');
  await writeFile(file, gzipSync(`${[...body, JSON.stringify(end)].join('\n')}\n`));
}
