/**
 * The processes under test, each a child process of the orchestrator: the service (`node
 * src/main.ts`), the sink servers and the Fastify peer. Each prints a ready line with its port;
 * the service is also polled on /healthz.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';

export const repo = fileURLToPath(new URL('../..', import.meta.url));

export interface Started {
  name: string;
  child: ChildProcess;
  pid: number;
  port: number;
  origin: string;
  /** Last lines of stdout and stderr. */
  output: string[];
  /** pino lines of level warn or above (the first 20), and how many there were. */
  problems: { count: number; first: string[] };
  exited: Promise<number | null>;
  stop(): Promise<void>;
}

/** The variables a child needs from our environment; everything else comes from `env`. */
function baseEnv(): Record<string, string> {
  const keep: Record<string, string> = {};
  for (const name of ['PATH', 'HOME', 'LANG', 'TMPDIR', 'TZ']) {
    const value = process.env[name];
    if (value !== undefined) keep[name] = value;
  }
  return keep;
}

/**
 * Starts `node <args>` in the repository and resolves once a stdout line is a JSON object with
 * `ready: true` and a `port` (the sinks and peer) or pino's `"msg":"ready"` line with the port
 * (the service).
 */
/** `cwd`: the checkout to run in (this one by default). */
export async function startNode(name: string, args: string[], env: Record<string, string>, options: { timeoutMs?: number; cwd?: string } = {}): Promise<Started> {
  const { timeoutMs = 90_000, cwd = repo } = options;
  const child = spawn(process.execPath, args, { cwd, env: { ...baseEnv(), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  const problems = { count: 0, first: [] as string[] };
  const remember = (line: string) => {
    output.push(line);
    if (output.length > 200) output.shift();
  };
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not become ready in ${timeoutMs} ms:\n${output.join('\n')}`)), timeoutMs);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      remember(line);
      if (!line.startsWith('{')) return;
      const level = /"level":(\d+)/.exec(line);
      if (level && Number(level[1]) >= 40) {
        problems.count++;
        if (problems.first.length < 20) problems.first.push(line.slice(0, 600));
      }
      try {
        const parsed = JSON.parse(line) as { ready?: boolean; msg?: string; port?: number; pid?: number };
        // With HTTP_PROCESSES > 1 each service process logs "ready" (with its own pid) before the supervisor does.
        const own = parsed.pid === undefined || parsed.pid === child.pid;
        if ((parsed.ready === true || parsed.msg === 'ready') && typeof parsed.port === 'number' && own) {
          clearTimeout(timer);
          resolve(parsed.port);
        }
      } catch {
        // not JSON
      }
    });
    createInterface({ input: child.stderr! }).on('line', (line) => {
      remember(line);
      problems.count++;
      if (problems.first.length < 20) problems.first.push(`stderr: ${line.slice(0, 600)}`);
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited with ${code} before it was ready:\n${output.join('\n')}`));
    });
  });
  const origin = `http://127.0.0.1:${port}`;
  return {
    name,
    child,
    pid: child.pid!,
    port,
    origin,
    output,
    problems,
    exited,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(killer);
    },
  };
}

/** Resolves once GET /healthz answers 200. */
export async function waitHealthy(origin: string, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < end) {
    try {
      const response = await fetch(`${origin}/healthz`);
      await response.arrayBuffer();
      if (response.status === 200) return;
      last = `status ${response.status}`;
    } catch (error) {
      last = String(error);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${origin}/healthz did not answer 200 (${last})`);
}
