import { spawn, type ChildProcess } from 'node:child_process';
import type { Test } from 'tap';
import { api, repo } from './service-process.ts';
import { multipartBody } from './uploads.ts';

// Shared by the `storage migrate` tests: the cli as a child process, uploads of every kind of
// stored object through a real service, and the links that serve them.

export interface CliRun {
  child: ChildProcess;
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
}

/** `node src/cli/main.ts <args>` with exactly `env`; its output collected. */
export function runCli(env: Record<string, string>, args: string[]): CliRun {
  const child = spawn(process.execPath, ['src/cli/main.ts', ...args], { cwd: repo, env: { ...env, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk) => (stdout += chunk));
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve) => {
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return { child, done };
}

/** Runs `storage migrate --to <to>` to its end and returns its JSON summary (fails the test on a non-zero exit). */
export async function migrate(t: Test, env: Record<string, string>, to: 'fs' | 's3'): Promise<any> {
  const result = await runCli(env, ['storage', 'migrate', '--to', to]).done;
  t.equal(result.code, 0, `storage migrate --to ${to} exits 0${result.code === 0 ? '' : `: ${result.stderr}`}`);
  return JSON.parse(result.stdout);
}

/** One stored object as a user reaches it: how to fetch its bytes from whichever service runs now. */
export interface StoredFile {
  kind: 'media' | 'team-file' | 'todo-file';
  id: string;
  content: Buffer;
  /** The path (and query) that serves the bytes, asked of the service on `port` with `key`. */
  link(port: number): Promise<string>;
}

const auth = (key: string) => ({ authorization: `Bearer ${key}` });

async function postMultipart(port: number, path: string, key: string, content: Buffer, fileName: string): Promise<any> {
  const { body, contentType } = multipartBody([{ content, fileName }]);
  const response = await fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', headers: { ...auth(key), 'content-type': contentType }, body });
  const answer = (await response.json()) as any;
  if (response.status !== 201) throw new Error(`upload to ${path} answered ${response.status}: ${JSON.stringify(answer)}`);
  return answer;
}

/** A public media upload; its link is its public URL's path. */
export async function uploadMedia(port: number, teamId: string, key: string, content: Buffer): Promise<StoredFile> {
  const answer = await postMultipart(port, `/v1/cdn/media/${teamId}/upload/file`, key, content, 'picture.png');
  const path = new URL(answer.publicUrl).pathname;
  return { kind: 'media', id: answer.id, content, link: async () => path };
}

/** A team file; its link is the signed preview URL a read of it gives. */
export async function uploadTeamFile(port: number, teamId: string, key: string, content: Buffer): Promise<StoredFile> {
  const answer = await postMultipart(port, `/v1/teams/${teamId}/files/multipart`, key, content, 'notes.png');
  return {
    kind: 'team-file', id: answer.id, content,
    link: async (at) => previewPath(await api(at, 'GET', `/v1/teams/${teamId}/files/${answer.id}`, auth(key))),
  };
}

/** A to-do file, on a board and to-do made for it. */
export async function uploadTodoFile(port: number, teamId: string, key: string, content: Buffer): Promise<StoredFile> {
  const board = await api(port, 'POST', `/v1/teams/${teamId}/todo-boards`, auth(key), { title: 'Moving' });
  const todo = await api(port, 'POST', `/v1/teams/${teamId}/todo-boards/${board.body.id}/todos`, auth(key), { title: 'Copy the files' });
  if (todo.status !== 201) throw new Error(`to-do creation failed: ${JSON.stringify(todo.body)}`);
  const answer = await postMultipart(port, `/v1/teams/${teamId}/todos/${todo.body.id}/files/multipart`, key, content, 'plan.png');
  return {
    kind: 'todo-file', id: answer.id, content,
    link: async (at) => previewPath(await api(at, 'GET', `/v1/teams/${teamId}/todos/${todo.body.id}/files/${answer.id}`, auth(key))),
  };
}

function previewPath(read: { status: number; body: any }): string {
  if (read.status !== 200) throw new Error(`file read answered ${read.status}: ${JSON.stringify(read.body)}`);
  const url = new URL(read.body.previewUrl);
  return `${url.pathname}${url.search}`;
}

/** Fetches every file from the service on `port`: each answer's status and whether its bytes are the uploaded ones. */
export async function servedFiles(port: number, files: StoredFile[]): Promise<{ kind: string; status: number; identical: boolean }[]> {
  const served = [];
  for (const file of files) {
    const response = await fetch(`http://127.0.0.1:${port}${await file.link(port)}`);
    const bytes = Buffer.from(await response.arrayBuffer());
    served.push({ kind: file.kind, status: response.status, identical: bytes.equals(file.content) });
  }
  return served;
}

/** What `servedFiles` answers when every file is served with its own bytes. */
export function allServed(files: StoredFile[]): { kind: string; status: number; identical: boolean }[] {
  return files.map((file) => ({ kind: file.kind, status: 200, identical: true }));
}

/** Starts a service expected to refuse; resolves with its exit code and output. */
export function refusedStart(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--experimental-async-context-frame', 'src/main.ts'], { cwd: repo, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (chunk) => (output += chunk));
    child.stderr!.on('data', (chunk) => (output += chunk));
    child.on('close', (code) => resolve({ code, output }));
  });
}
