/** The orchestrator's side of the load client process (bench/lib/load-client.ts). */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ClientAnswer, ClientRequest, Job } from './load-client.ts';
import type { PhaseResult } from './stats.ts';

const CLIENT_FILE = fileURLToPath(new URL('./load-client.ts', import.meta.url));

export class LoadClient {
  private child: ChildProcess | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (result: PhaseResult) => void; reject: (error: Error) => void }>();

  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  async start(): Promise<void> {
    const child = fork(CLIENT_FILE, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.child = child;
    await new Promise<void>((resolve, reject) => {
      const onMessage = (message: ClientAnswer) => {
        if (message.type === 'ready') {
          child.off('message', onMessage);
          resolve();
        }
      };
      child.on('message', onMessage);
      child.once('exit', (code) => reject(new Error(`load client exited with ${code} before it was ready`)));
    });
    child.on('message', (message: ClientAnswer) => {
      if (message.type === 'ready') return;
      const waiter = this.pending.get(message.id);
      if (!waiter) return;
      this.pending.delete(message.id);
      if (message.type === 'result') waiter.resolve(message.result);
      else waiter.reject(new Error(message.message));
    });
    child.once('exit', (code, signal) => {
      for (const waiter of this.pending.values()) waiter.reject(new Error(`load client exited (${code ?? signal})`));
      this.pending.clear();
      if (this.child === child) this.child = null;
    });
  }

  /** Runs a job; after `timeoutMs` the client is killed (and restarted) and the job fails. */
  async run(job: Job, timeoutMs: number): Promise<PhaseResult> {
    if (!this.child) await this.start();
    const child = this.child!;
    const id = this.nextId++;
    const result = new Promise<PhaseResult>((resolve, reject) => this.pending.set(id, { resolve, reject }));
    child.send({ type: 'run', id, job } satisfies ClientRequest);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`load client did not finish within ${Math.round(timeoutMs / 1000)} s (killed)`));
      }, timeoutMs);
    });
    try {
      return await Promise.race([result, timeout]);
    } finally {
      clearTimeout(timer);
      result.catch(() => undefined);
    }
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = null;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.send({ type: 'exit' } satisfies ClientRequest);
    const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(killer);
  }
}
