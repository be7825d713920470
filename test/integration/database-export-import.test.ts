import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { importDatabase } from '../../src/backup/database-import.ts';
import { ServiceError } from '../../src/errors/service-error.ts';
import { AUTH_SECRET, createTeam } from '../helpers/crashed-instance.ts';
import { connectPg, createTestDatabase } from '../helpers/database.ts';
import { dumpData, dumpLines, runCli, writeDumpLines } from '../helpers/database-dumps.ts';
import { api, spawnService } from '../helpers/service-process.ts';
import { KiB, multipartBody, pngLike, uploadPath } from '../helpers/uploads.ts';

// Issue 34.3: `db export` takes a running service's embedded database to a file, `db import` loads it
// into an empty PostgreSQL server database (in the server pass, PostgreSQL 15 against the embedded 18),
// and a service on that database serves the same files. Then the refusals: a file of a newer schema,
// a target that is not empty, a damaged file, rows that do not hold together; none leaves anything.

t.setTimeout(240_000);

const dataDir = await mkdtemp(join(tmpdir(), 'media-db-export-'));
await chmod(dataDir, 0o755); // the embedded PostgreSQL runs as the postgres user
t.teardown(() => rm(dataDir, { recursive: true, force: true }));
const exported = join(dataDir, 'export.jsonl.gz');
const baseEnv = { DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'info', AUTH_SECRET, RATE_LIMIT_POINTS: '100000' };

async function tableCount(url: string): Promise<number> {
  const client = await connectPg(url);
  try {
    return Number((await client.query(`select count(*) as n from pg_tables where schemaname = current_schema()`)).rows[0].n);
  } finally {
    await client.end();
  }
}

async function fileBytes(port: number, teamId: string, key: string, mediaId: string): Promise<Buffer> {
  const link = await api(port, 'GET', `/v1/cdn/media/${teamId}/${mediaId}`, { authorization: `Bearer ${key}` });
  if (link.status !== 200) throw new Error(`no link: ${JSON.stringify(link.body)}`);
  const url = new URL(link.body.url);
  const response = await fetch(`http://127.0.0.1:${port}${url.pathname}${url.search}`);
  if (response.status !== 200) throw new Error(`GET ${url.pathname} answered ${response.status}`);
  return Buffer.from(await response.arrayBuffer());
}

const source = await spawnService(t, { env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...baseEnv } });
const team = await createTeam(source.port, 'Export Team');
const uploaded: { id: string; content: Buffer }[] = [];
for (const [index, size] of [1, 70, 1100].entries()) {
  const content = pngLike(size * KiB);
  const { body, contentType } = multipartBody([{ content, fileName: `file-${index}.png` }]);
  const response = await fetch(`http://127.0.0.1:${source.port}${uploadPath(team.teamId, 'tags=alpha,beta')}`, {
    method: 'POST', headers: { authorization: `Bearer ${team.key}`, 'content-type': contentType }, body,
  });
  const answer = (await response.json()) as { id: string };
  if (response.status !== 201) throw new Error(`upload failed: ${JSON.stringify(answer)}`);
  uploaded.push({ id: answer.id, content });
}

t.test('db export while the service runs, db import into a server database, and a service there serves the same files', async (t) => {
  const exportRun = await runCli(['db', 'export', exported], { DATA_DIR: dataDir });
  t.equal(exportRun.code, 0, exportRun.stderr);
  t.match(JSON.parse(exportRun.stdout), { file: exported, tables: Number, rows: Number });

  const target = await createTestDatabase(t, { empty: true });
  const importRun = await runCli(['db', 'import', exported], { DATABASE_URL: target, DATA_DIR: dataDir });
  t.equal(importRun.code, 0, importRun.stderr);
  t.match(JSON.parse(importRun.stdout), { migratedAfterLoad: [] });

  // Every row of every table, as PostgreSQL writes it, is the same on both sides.
  const again = join(dataDir, 'again.jsonl.gz');
  const reexport = await runCli(['db', 'export', again], { DATABASE_URL: target, DATA_DIR: dataDir });
  t.equal(reexport.code, 0, reexport.stderr);
  t.same(await dumpData(again), await dumpData(exported), 'the imported database holds exactly the exported rows');

  const refused = await runCli(['db', 'import', exported], { DATABASE_URL: target, DATA_DIR: dataDir });
  t.equal(refused.code, 1);
  t.equal(refused.stdout, '');
  t.match(JSON.parse(refused.stderr), { status: 409, messageKey: 'error.conflict', message: /is not empty/ });

  source.child.kill('SIGTERM');
  t.equal(await source.exited, 0);
  const moved = await spawnService(t, { env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...baseEnv, DATABASE_URL: target } });
  for (const file of uploaded) t.ok((await fileBytes(moved.port, team.teamId, team.key, file.id)).equals(file.content), `file ${file.id} served from the moved database`);
  const listed = await api(moved.port, 'GET', `/v1/cdn/media/${team.teamId}/tags`, { authorization: `Bearer ${team.key}` });
  t.equal(listed.status, 200);
  t.match(JSON.stringify(listed.body), /alpha/, 'the tag counts came along');
  moved.child.kill('SIGTERM');
  t.equal(await moved.exited, 0);
});

t.test('a file made by a newer schema is refused before anything is written', async (t) => {
  const lines = await dumpLines(exported);
  const header = JSON.parse(lines[0]!);
  header.migrations.push('Migration29991231000000FromTheFuture');
  const newer = join(dataDir, 'newer.jsonl.gz');
  await writeDumpLines(newer, [JSON.stringify(header), ...lines.slice(1)]);
  const target = await createTestDatabase(t, { empty: true });
  const refused = await runCli(['db', 'import', newer], { DATABASE_URL: target, DATA_DIR: dataDir });
  t.equal(refused.code, 1);
  t.match(JSON.parse(refused.stderr), { status: 409, messageKey: 'error.conflict', message: /newer version.*Migration29991231000000FromTheFuture/ });
  t.equal(await tableCount(target), 0, 'the target was not touched');
});

t.test('a damaged file is refused: cut short, a changed byte, not gzip', async (t) => {
  const target = await createTestDatabase(t, { empty: true });
  const whole = await readFile(exported);
  const cut = join(dataDir, 'cut.jsonl.gz');
  await writeFile(cut, whole.subarray(0, Math.floor(whole.length / 2)));
  const lines = await dumpLines(exported);
  const changed = join(dataDir, 'changed.jsonl.gz');
  const { gzipSync } = await import('node:zlib');
  await writeFile(changed, gzipSync(`${lines.map((line) => line.replace('Export Team', 'Exp0rt Team')).join('\n')}\n`));
  const notGzip = join(dataDir, 'plain.jsonl');
  await writeFile(notGzip, lines.join('\n'));
  // In this process (the cli's printing of a refusal is checked above): one cli start per file would cost seconds each.
  for (const file of [cut, changed, notGzip, join(dataDir, 'missing.jsonl.gz')]) {
    const refusal = await importDatabase(target, file).then(() => null, (error: unknown) => error);
    t.ok(refusal instanceof ServiceError, file);
    t.match((refusal as ServiceError).toBody(), { status: 400, messageKey: 'error.badRequest', message: /^Cannot import/ }, file);
  }
  const unwritable = await runCli(['db', 'export', join(dataDir, 'no-such-dir', 'x.jsonl.gz')], { DATA_DIR: dataDir, DATABASE_URL: target });
  t.equal(unwritable.code, 1);
  t.match(JSON.parse(unwritable.stderr), { status: 400, message: /ENOENT/ }, 'a path that cannot be written is the operator\'s to fix, not a 500');
  t.equal(await tableCount(target), 0, 'the target was not touched');
});

t.test('rows that do not hold together roll the load back; the same target then takes an intact file', async (t) => {
  const lines = await dumpLines(exported);
  const orphan = join(dataDir, 'orphan.jsonl.gz');
  // A media file of a team the file does not have: its foreign key fails once all rows are in.
  await writeDumpLines(orphan, lines.map((line) => line.startsWith('{"id"') && line.includes('"storage_key"')
    ? line.replaceAll(team.teamId, '00000000-0000-4000-8000-000000000000') : line));
  const target = await createTestDatabase(t, { empty: true });
  const refused = await runCli(['db', 'import', orphan], { DATABASE_URL: target, DATA_DIR: dataDir });
  t.equal(refused.code, 1);
  t.match(JSON.parse(refused.stderr), { status: 400, message: /rows do not load.*foreign key/ });
  const retried = await runCli(['db', 'import', exported], { DATABASE_URL: target, DATA_DIR: dataDir });
  t.equal(retried.code, 0, retried.stderr);
});
