/**
 * PostgreSQL's CPU per upload of the batch commit alone, by batch size.
 *
 *   node bench/batch-commit.ts [--pg URL] [--sizes 4,8,14,20,32] [--uploads N] [--setup file.sql]
 *                              [--ids v4|v7] [--prefill N]
 *
 * Creates a scratch database (the service migrates it and bootstraps a team and key), then calls
 * `media_commit_uploads` on one connection with batches shaped like the log stream's (8 KiB JSON
 * files kept in the database, no folder or tags, the event payload the service sends) and reads
 * that backend's CPU from /proc: PostgreSQL must run on this machine. `synchronous_commit` is off,
 * so the WAL flush's wait and CPU are not counted. `--setup` runs a SQL file first (a variant of
 * the function or an index to compare). Each size runs N uploads after a warm-up of 100 batches.
 *
 * `--ids` picks the media ids' kind (random v4, or v7 ordered by time as the service makes them);
 * `--prefill` first writes N older rows of that kind (with one-byte contents), so that the indexes
 * keyed by id are the size of a fleet's rather than a fresh database's. A checkpoint precedes each
 * size: the first change of a page after one writes the whole page to the WAL, as it does in
 * production every few minutes, and the WAL bytes per upload are reported.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { newMediaId } from '../src/domain/media/media-id.ts';
import { prefillMedia } from './lib/prefill.ts';
import { dropDatabase, resetDatabase, startService } from './lib/service.ts';

const KiB = 1024;
const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i]!.replace(/^--/, ''), process.argv[i + 1] ?? '');
const serverUrl = args.get('pg') ?? process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const sizes = (args.get('sizes') ?? '4,8,14,20,32').split(',').map(Number);
const uploads = Number(args.get('uploads') ?? 20_000);
const setup = args.get('setup');
const ids = args.get('ids') ?? 'v7';
if (ids !== 'v4' && ids !== 'v7') throw new Error('--ids is v4 or v7');
const newId = ids === 'v7' ? newMediaId : randomUUID;
const prefill = Number(args.get('prefill') ?? 0);

const databaseUrl = await resetDatabase(serverUrl, 'media_bench_batch_commit');
const dataDir = join(os.tmpdir(), `media-bench-batch-commit-${randomBytes(4).toString('hex')}`);
const service = await startService({
  driver: 'fs', databaseUrl, dataDir,
  s3: null, s3KeyPrefix: '', authSecret: randomBytes(24).toString('hex'),
});
await service.stop();
await rm(dataDir, { recursive: true, force: true });

const client = new pg.Client({ connectionString: databaseUrl });
await client.connect();
try {
  if (setup) await client.query(readFileSync(setup, 'utf8'));
  const teamId = service.teamId;
  const keyId = (await client.query<{ id: string }>('select id from api_key where team_id = $1 limit 1', [teamId])).rows[0]!.id;
  const pid = (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
  await client.query('set synchronous_commit = off');
  if (prefill > 0) await prefillMedia(client, { teamId, keyId, rows: prefill, ids });

  /** The backend's user + system CPU in µs (/proc/<pid>/stat counts clock ticks of 10 ms). */
  const backendCpu = (): number => {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  };
  const log = Buffer.from(JSON.stringify({ level: 'info', lines: Array.from({ length: 200 }, (_, i) => `line ${i}: ${randomBytes(12).toString('hex')}`) })).subarray(0, 8 * KiB);

  /** The statement's parameters as group-commit.ts builds them. */
  const batch = (size: number): unknown[] => {
    const rows = Array.from({ length: size }, (_, ord) => {
      const mediaId = newId();
      const createdAt = new Date().toISOString();
      const fileName = `server-${ord}-${mediaId.slice(0, 8)}.json`;
      return {
        ord, media_id: mediaId, folder_id: null, file_name: fileName, storage_key: `media/${teamId}/${mediaId}`, storage_location: 'db',
        size: log.length, content_type: 'application/json', hash: randomBytes(8).toString('hex'), is_public: false, tags: [], key_id: keyId,
        created_at: createdAt, event_id: randomUUID(),
        payload: { media: { id: mediaId, teamId, folderId: null, fileName, size: log.length, contentType: 'application/json', isPublic: false, tags: [], createdAt, updatedAt: createdAt } },
        content_at: ord * log.length, content_length: log.length,
      };
    });
    return [teamId, JSON.stringify(rows), 1e12, 1e12, Buffer.concat(rows.map(() => log))];
  };
  const sql = 'select * from media_commit_uploads($1, $2::jsonb, $3, $4, $5::bytea)';

  const walPosition = async () => (await client.query<{ lsn: string }>('select pg_current_wal_lsn()::text as lsn')).rows[0]!.lsn;
  const walBytesSince = async (lsn: string) =>
    Number((await client.query<{ bytes: string }>('select pg_wal_lsn_diff(pg_current_wal_lsn(), $1) as bytes', [lsn])).rows[0]!.bytes);

  console.log(`ids ${ids}, ${prefill} rows before\n`);
  console.log('| batch size | backend CPU per upload | wall per upload | WAL per upload |\n|---:|---:|---:|---:|');
  for (const size of sizes) {
    for (let i = 0; i < 100; i++) await client.query(sql, batch(size));
    await client.query('checkpoint');
    const batches = Math.ceil(uploads / size);
    const walBefore = await walPosition();
    const cpuBefore = backendCpu();
    const started = performance.now();
    for (let i = 0; i < batches; i++) await client.query(sql, batch(size));
    const wallMicros = (performance.now() - started) * 1000;
    const count = batches * size;
    const cpu = (backendCpu() - cpuBefore) / count;
    const wal = (await walBytesSince(walBefore)) / count;
    console.log(`| ${size} | ${cpu.toFixed(0)} µs | ${(wallMicros / count).toFixed(0)} µs | ${(wal / KiB).toFixed(1)} KiB |`);
  }
} finally {
  await client.end();
  await dropDatabase(serverUrl, 'media_bench_batch_commit').catch(() => undefined);
}
