import { chmod, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { Test } from 'tap';
import { AUTH_SECRET, createTeam } from '../helpers/crashed-instance.ts';
import { api, spawnService, type RunningService } from '../helpers/service-process.ts';
import { KiB, multipartBody, pngLike, uploadPath } from '../helpers/uploads.ts';
import { eventually, sleep } from '../helpers/wait.ts';

// Issue 32.4: three `npm start` processes on one DATA_DIR without DATABASE_URL share the embedded
// PostgreSQL that the first one started. Its owner is killed (SIGKILL) while a client uploads through
// the two others, and started again: it takes the running server over instead of stopping it, so the
// others keep their database. Then the owner restarts gracefully (it stops the server): the new server
// starts on the same port, /healthz of the others says `database` while it is down, and they recover
// on their own within seconds. Through both, every upload answered 201 is listed and stored, and every
// other answer is a clean 503 that left nothing.

// Its time is that of five service starts, three of them one after another (144-191 s in all at a load average of 16-18 on two cores; the waits of its own are a few seconds).
t.setTimeout(300_000);

if (process.env.TEST_PG_KIND === 'server') {
  t.skip('instances sharing the embedded PostgreSQL (the embedded pass runs it)', () => {});
  process.exit(0);
}

const dataDir = await mkdtemp(join(tmpdir(), 'media-shared-embedded-'));
await chmod(dataDir, 0o755); // the embedded PostgreSQL runs as the postgres user
t.teardown(() => rm(dataDir, { recursive: true, force: true }));
const env = {
  PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'info', AUTH_SECRET,
  RATE_LIMIT_POINTS: '100000',
};

/** The running server as its postmaster.pid names it. */
async function postmaster(): Promise<{ pid: number; port: number }> {
  const [pid, , , port] = (await readFile(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8')).split('\n');
  return { pid: Number(pid), port: Number(port) };
}

interface Outcome { port: number; status: number; id?: string; name?: string; messageKey?: string; error?: string }

/** Uploads small files one after another on each of `ports` (two at a time per port) until stopped. */
function burst(teamId: string, key: string, ports: number[]) {
  const outcomes: Outcome[] = [];
  let running = true;
  let sequence = 0;
  const worker = async (port: number) => {
    while (running) {
      const { body, contentType } = multipartBody([{ content: pngLike(8 * KiB), fileName: `burst-${++sequence}.png` }]);
      try {
        const response = await fetch(`http://127.0.0.1:${port}${uploadPath(teamId)}`, {
          method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': contentType }, body, signal: AbortSignal.timeout(20_000),
        });
        const answer = (await response.json()) as { id?: string; name?: string; messageKey?: string };
        outcomes.push({ port, status: response.status, id: answer.id, name: answer.name, messageKey: answer.messageKey });
        if (response.status !== 201) await sleep(100); // what a client told to retry later does
      } catch (error) {
        outcomes.push({ port, status: 0, error: String(error) });
      }
    }
  };
  const workers = ports.flatMap((port) => [worker(port), worker(port)]);
  return {
    outcomes,
    /** Uploads answered after `since` (an index into outcomes). */
    since: (start: number) => outcomes.slice(start),
    async stop() {
      running = false;
      await Promise.all(workers);
      return outcomes;
    },
  };
}

/** Polls until the last `count` uploads on every port were all 201. */
async function recovered(uploads: ReturnType<typeof burst>, ports: number[], count: number, timeoutMs: number): Promise<boolean> {
  return eventually(() => ports.every((port) => {
    const last = uploads.outcomes.filter((outcome) => outcome.port === port).slice(-count);
    return last.length === count && last.every((outcome) => outcome.status === 201);
  }), timeoutMs);
}

async function expectNothingLost(t: Test, port: number, teamId: string, key: string, outcomes: Outcome[]): Promise<void> {
  const created = outcomes.filter((outcome) => outcome.status === 201);
  const refused = outcomes.filter((outcome) => outcome.status !== 201);
  t.ok(created.length > 0, 'uploads succeeded', { created: created.length, refused: refused.length });
  t.same(refused.filter((outcome) => outcome.status !== 503 || outcome.name !== 'ServiceUnavailableError'), [], 'every other answer is a clean 503 in the error body');
  const listed = new Set<string>();
  for (let page = 1; ; page++) {
    const answer = await api(port, 'GET', `/v1/cdn/media/${teamId}`, { authorization: `Bearer ${key}`, pageSize: '100', pageNumber: String(page) });
    if (answer.status !== 200) throw new Error(`list failed: ${JSON.stringify(answer.body)}`);
    for (const file of answer.body.media as { id: string }[]) listed.add(file.id);
    if (answer.body.media.length < 100) break;
  }
  t.same(created.filter((outcome) => !listed.has(outcome.id!)), [], 'every upload answered 201 is listed');
  t.equal(listed.size, created.length, 'and nothing else is: a refused upload left no file');
  const stored = new Set(await readdir(join(dataDir, 'files', 'media', teamId)).catch(() => [] as string[]));
  t.same([...listed].filter((id) => ![...stored].some((name) => name.startsWith(id))), [], 'every listed file is stored');
  t.equal(stored.size, listed.size, 'one object per file');
  t.same(await readdir(join(dataDir, 'files', '.uploads')).catch(() => []), [], 'no temp file left');
}

t.test('the owner of the embedded PostgreSQL is killed and restarted mid-burst: the others keep working and lose nothing', async (t) => {
  const began = Date.now();
  const elapsed = (step: string) => t.comment(`${step}: ${Date.now() - began} ms`);
  let owner: RunningService = await spawnService(t, { env });
  elapsed('owner ready');
  const others = await Promise.all([spawnService(t, { env }), spawnService(t, { env })]);
  const ports = others.map((other) => other.port);
  elapsed('others ready');
  const server = await postmaster();
  t.ok((await readFile(join(dataDir, 'postgres-owner.json'), 'utf8')).includes(`"pid":${owner.child.pid}`), 'the first instance owns the server');

  const { teamId, key } = await createTeam(ports[0]!, 'Shared');
  const uploads = burst(teamId, key, ports);
  t.ok(await eventually(() => uploads.outcomes.length >= 10, 15_000), 'the burst runs');

  // 1. SIGKILL: the server keeps running without its owner; the restarted owner takes it over.
  owner.child.kill('SIGKILL');
  await owner.exited;
  owner = await spawnService(t, { env });
  elapsed('owner restarted after SIGKILL');
  t.same(await postmaster(), server, 'the restarted owner reuses the running server (same pid, same port)');
  t.ok((await readFile(join(dataDir, 'postgres-owner.json'), 'utf8')).includes(`"pid":${owner.child.pid}`), 'and owns it now');
  const afterKill = uploads.outcomes.length;
  t.ok(await recovered(uploads, ports, 5, 10_000), 'the others keep uploading');
  t.same(uploads.since(0).filter((outcome) => outcome.status !== 201), [], 'not one upload was refused meanwhile');
  for (const port of [...ports, owner.port]) t.equal((await api(port, 'GET', '/healthz')).status, 200, `/healthz 200 on ${port}`);
  t.ok(await eventually(() => uploads.outcomes.length >= afterKill + ports.length * 2, 15_000), 'uploads went on after the restart');
  elapsed('kill phase checked');

  // 2. SIGTERM: the owner stops the server; its next start brings one up on the same port, which the others reconnect to.
  owner.child.kill('SIGTERM');
  t.equal(await owner.exited, 0, 'the owner stops cleanly, the server with it');
  const down = await api(ports[0]!, 'GET', '/healthz');
  t.equal(down.status, 503, '/healthz of the others answers 503 while the database is down');
  t.equal(down.body.value, 'database', 'naming the database');
  const beforeRestart = uploads.outcomes.length;
  owner = await spawnService(t, { env });
  const restarted = Date.now();
  elapsed('owner restarted after SIGTERM');
  t.equal((await postmaster()).port, server.port, 'the new server listens on the port of the last one');
  t.ok(await recovered(uploads, ports, 5, 15_000), 'the others upload again');
  t.ok(Date.now() - restarted < 10_000, 'within seconds', { ms: Date.now() - restarted });
  t.ok(await eventually(async () => (await api(ports[1]!, 'GET', '/healthz')).status === 200, 5_000), '/healthz of the others answers 200 again');
  t.ok(uploads.since(beforeRestart).some((outcome) => outcome.status === 201), 'uploads were acknowledged after the restart');

  elapsed('SIGTERM phase checked');
  const outcomes = await uploads.stop();
  t.same(outcomes.filter((outcome) => outcome.status === 0), [], 'every upload got an answer');
  await expectNothingLost(t, ports[0]!, teamId, key, outcomes);

  elapsed('outcomes checked');
  // The others first: the owner stops the server when it stops.
  for (const running of [...others, owner]) {
    running.child.kill('SIGTERM');
    t.equal(await running.exited, 0, 'SIGTERM exits 0');
  }
});
