import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';

// The real service as a child process (`node src/main.ts`), for the tests that signal or kill it.

export const repo = resolve(import.meta.dirname, '../..');

export interface RunningService {
  child: ChildProcess;
  port: number;
  /** Every stdout line and stderr chunk, in arrival order. */
  output: string[];
  exited: Promise<number | null>;
}

/**
 * Starts the service with exactly `env` and resolves once it logs "ready" with its port (or the line
 * `isReady` picks: with HTTP_PROCESSES > 1 each service process logs "ready" before the supervisor does).
 * A child still running at teardown is SIGKILLed.
 */
/**
 * Test services keep every file in the object store unless a test asks for the database
 * (DATABASE_FILE_MAX_BYTES): most tests are about the object store's files, and say so by where
 * they look; the database's small files have tests of their own (small-files*.test.ts).
 */
export const TEST_PLACEMENT = { DATABASE_FILE_MAX_BYTES: '0' };

export async function spawnService(
  t: { teardown(fn: () => unknown): void },
  options: { env: Record<string, string>; cwd?: string; isReady?: (line: string) => boolean },
): Promise<RunningService> {
  const isReady = options.isReady ?? ((line: string) => line.includes('"msg":"ready"'));
  const env = { ...TEST_PLACEMENT, ...options.env };
  const child = spawn(process.execPath, ['--experimental-async-context-frame', 'src/main.ts'], { cwd: options.cwd ?? repo, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  const exited = new Promise<number | null>((resolveExit) => child.on('exit', (code) => resolveExit(code)));
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const port = await new Promise<number>((resolvePort, reject) => {
    const timer = setTimeout(() => reject(new Error(`service did not become ready:\n${output.join('\n')}`)), 60_000);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      output.push(line);
      if (isReady(line)) {
        clearTimeout(timer);
        resolvePort(JSON.parse(line).port);
      }
    });
    child.stderr!.on('data', (chunk) => output.push(String(chunk)));
    void exited.then((code) => reject(new Error(`service exited with ${code}:\n${output.join('\n')}`)));
  });
  return { child, port, output, exited };
}

/** A JSON request to the service on `port`; the response body is parsed as JSON. */
export async function api(port: number, method: string, path: string, headers: Record<string, string> = {}, body?: unknown) {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, {
    method, headers: { 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as any };
}
