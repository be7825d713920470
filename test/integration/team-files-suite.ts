import { request as httpRequest } from 'node:http';
import type { Test } from 'tap';
import { hashContent, loadXxhash } from '../../src/uploads/hashing/content-hash.ts';
import { reconcileStorage } from '../../src/domain/usage/storage-reconcile.ts';
import { connectPg } from '../helpers/database.ts';
import { expectError, startTestServer, type TestServer } from '../helpers/server.ts';
import { closeS3Client, driverSettings, settledObjects, type Driver } from '../helpers/storage.ts';
import { memberWithKey, teamLogRows } from '../helpers/team-admin.ts';
import { KiB, MiB, multipartBody, pngLike, send, sendChunked, uploadJson } from '../helpers/uploads.ts';

/** Team files of a team and the counters, straight from the database. */
export async function fileState(server: TestServer, teamId: string) {
  const client = await connectPg(server.databaseUrl);
  try {
    const { rows } = await client.query(
      `select (select count(*) from team_file where team_id = $1)::int as team_files,
              (select count(*) from todo_file where team_id = $1)::int as todo_files,
              (select coalesce(sum(size), 0) from media_file where team_id = $1)::bigint
                + (select coalesce(sum(size), 0) from team_file where team_id = $1)
                + (select coalesce(sum(size), 0) from todo_file where team_id = $1) as sum_of_sizes,
              t.used_storage, t.reserved_storage,
              (select count(*) from upload_reservation where team_id = $1)::int as reservations
         from team t where t.id = $1`,
      [teamId],
    );
    const row = rows[0];
    return {
      teamFiles: row.team_files as number, todoFiles: row.todo_files as number, sumOfSizes: Number(row.sum_of_sizes), usedStorage: Number(row.used_storage),
      reservedStorage: Number(row.reserved_storage), reservations: row.reservations as number,
    };
  } finally {
    await client.end();
  }
}

export function teamFileJson(server: TestServer, teamId: string, key: string, body: unknown) {
  const payload = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  return send(server, 'POST', `/v1/teams/${teamId}/files`, key, payload, { 'content-type': 'application/json' });
}

export function teamFileMultipart(server: TestServer, teamId: string, key: string, content: Buffer, fileName: string, query = '') {
  const { body, contentType } = multipartBody([{ content, fileName }]);
  return send(server, 'POST', `/v1/teams/${teamId}/files/multipart${query ? `?${query}` : ''}`, key, body, { 'content-type': contentType });
}

async function fetchBytes(url: string): Promise<{ status: number; body: Buffer; headers: Headers }> {
  const response = await fetch(url);
  return { status: response.status, body: Buffer.from(await response.arrayBuffer()), headers: response.headers };
}

/** Team files end to end against one storage driver. */
export async function teamFilesSuite(t: Test, driver: Driver): Promise<void> {
  const server = await startTestServer(t, { settings: { ...driverSettings(driver), RATE_LIMIT_POINTS: 100_000, CRASH_SWEEP_MIN_AGE_SECONDS: 3600 } });
  t.teardown(closeS3Client);
  const xxhash = await loadXxhash();

  async function expectNothingLeft(t: Test, teamId: string, before: Awaited<ReturnType<typeof fileState>>) {
    const state = await fileState(server, teamId);
    t.equal(state.teamFiles, before.teamFiles, 'no team file row');
    t.equal(state.usedStorage, before.usedStorage, 'no storage counted');
    t.equal(state.reservedStorage, 0, 'no storage reserved');
    t.equal(state.reservations, 0, 'no reservation row');
    const stored = await settledObjects(driver, server.dataDir, teamId, before.teamFiles, 'team-files');
    t.equal(stored.objects.length, before.teamFiles, 'no object stored');
    t.same(stored.inProgress, [], 'no temp file or multipart upload left');
  }

  /** Sends only the headers of an upload (no body byte) and answers the status and body. */
  function headersOnly(path: string, key: string, contentType: string, contentLength: number): Promise<{ status: number; body: any }> {
    return new Promise((resolve, reject) => {
      const request = httpRequest(`${server.baseUrl}${path}`, {
        method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': contentType, 'content-length': String(contentLength) },
      });
      request.on('response', (response) => {
        let text = '';
        response.on('data', (chunk) => (text += chunk));
        response.on('end', () => {
          resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) });
          request.destroy();
        });
      });
      request.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' || error.code === 'EPIPE' ? undefined : reject(error)));
      request.flushHeaders();
    });
  }

  t.test('JSON upload (data URI and base64), one counter with media, usage split, hash, log, read, preview', async (t) => {
    const team = await server.createTeam('Files');
    const target = await memberWithKey(server, team.teamId, 'target', []);
    const media = await uploadJson(server, team.teamId, team.key, { file: pngLike(3000).toString('base64'), fileName: 'shot.png' });
    t.equal(media.status, 201);
    const content = Buffer.from('the first team file\n'.repeat(50));
    const created = await teamFileJson(server, team.teamId, team.key, {
      file: `data:text/plain;base64,${content.toString('base64')}`, fileName: 'notes/readme.txt', targetTeamMemberId: target.memberId,
    });
    t.equal(created.status, 201, JSON.stringify(created.body));
    t.same(Object.keys(created.body).sort(), ['id', 'path', 'usedTeamStorage']);
    t.equal(created.body.path, 'readme.txt', 'the last path segment of fileName');
    t.equal(created.body.usedTeamStorage, 3000 + content.length, 'one counter: the media file and the team file');

    // fileName before file, plain base64.
    const second = await teamFileJson(server, team.teamId, team.key, `{"fileName":"data.bin","file":"${Buffer.from([1, 2, 3, 4]).toString('base64')}"}`);
    t.equal(second.status, 201);
    t.equal(second.body.usedTeamStorage, 3000 + content.length + 4);

    const usage = await server.media('GET', `/v1/cdn/media/${team.teamId}/usage`, team.key);
    t.match(usage.body.storage, { usedBytes: 3000 + content.length + 4, mediaBytes: 3000, teamFileBytes: content.length + 4, todoFileBytes: 0 });

    const read = await server.media('GET', `/v1/teams/${team.teamId}/files/${created.body.id}`, team.key);
    t.equal(read.status, 200);
    t.match(read.body, {
      id: created.body.id, teamId: team.teamId, uploadTeamMemberId: team.ownerId, targetTeamMemberId: target.memberId, path: 'readme.txt',
      size: content.length, hash: hashContent(xxhash, content),
    });
    const expiresIn = Date.parse(read.body.previewUrlExpiresAt) - Date.now();
    t.ok(expiresIn > 3500_000 && expiresIn <= 3600_000, 'the preview link is valid for an hour');
    const preview = await fetchBytes(read.body.previewUrl);
    t.equal(preview.status, 200);
    t.ok(preview.body.equals(content), 'the preview serves the stored bytes');
    t.equal(preview.headers.get('x-content-type-options'), 'nosniff');
    t.match(preview.headers.get('content-type'), /^text\/plain/);
    const tampered = read.body.previewUrl.replace(/signature=./, (m: string) => (m.endsWith('A') ? m.slice(0, -1) + 'B' : m.slice(0, -1) + 'A'));
    t.equal((await fetchBytes(tampered)).status, 403, 'a changed signature is refused');
    t.equal((await fetchBytes(read.body.previewUrl.split('?')[0])).status, 403, 'no signature, no bytes');
    const otherFile = read.body.previewUrl.replace(created.body.id, second.body.id);
    t.equal((await fetchBytes(otherFile)).status, 403, 'a signature is for one file only');

    const logs = (await teamLogRows(server, team.teamId)).filter((row) => row.action === 'TEAM_FILE_UPLOADED');
    t.equal(logs.length, 2);
    t.match(logs[0], { team_member_id: null, target_team_member_id: target.memberId, target_identifier: created.body.id, data: { fileName: 'readme.txt', size: content.length } });
    t.equal(logs[1]!.target_team_member_id, null);

    const stored = await settledObjects(driver, server.dataDir, team.teamId, 2, 'team-files');
    t.equal(stored.objects.length, 2, 'the objects are under team-files/<teamId>/');
    const state = await fileState(server, team.teamId);
    t.equal(state.usedStorage, state.sumOfSizes, 'usedTeamStorage is the sum of every kind');
  });

  t.test('multipart upload: name from the part or the query, target member from the query (404 before the body)', async (t) => {
    const team = await server.createTeam('Multipart');
    const target = await memberWithKey(server, team.teamId, 'mtarget', []);
    const content = pngLike(600 * KiB);
    const created = await teamFileMultipart(server, team.teamId, team.key, content, 'big.png', `targetTeamMemberId=${target.memberId}`);
    t.equal(created.status, 201, JSON.stringify(created.body));
    t.equal(created.body.path, 'big.png');
    const read = await server.media('GET', `/v1/teams/${team.teamId}/files/${created.body.id}`, team.key);
    t.match(read.body, { size: content.length, hash: hashContent(xxhash, content), targetTeamMemberId: target.memberId });
    t.ok((await fetchBytes(read.body.previewUrl)).body.equals(content));
    const renamed = await teamFileMultipart(server, team.teamId, team.key, Buffer.from('x'), 'part.txt', 'fileName=chosen.txt');
    t.equal(renamed.body.path, 'chosen.txt');

    const before = await fileState(server, team.teamId);
    expectError(t, await teamFileMultipart(server, team.teamId, team.key, content, 'a.png', 'targetTeamMemberId=00000000-0000-4000-8000-000000000000'), 404, 'error.notFound');
    expectError(t, await teamFileMultipart(server, team.teamId, team.key, content, 'a.png', 'targetTeamMemberId=nope'), 400, 'error.badRequest');
    await expectNothingLeft(t, team.teamId, before);
  });

  t.test('list: {data, count, usedTeamStorage}, filters, paging, who sees what', async (t) => {
    const team = await server.createTeam('Lists');
    const alice = await memberWithKey(server, team.teamId, 'alice', ['team.files.upload']);
    const bob = await memberWithKey(server, team.teamId, 'bob', ['team.files.upload']);
    const carol = await memberWithKey(server, team.teamId, 'carol', ['team.files.manage']);
    const upload = async (key: string, name: string, targetTeamMemberId?: string) => {
      const response = await teamFileJson(server, team.teamId, key, { file: Buffer.from(name).toString('base64'), fileName: name, ...(targetTeamMemberId && { targetTeamMemberId }) });
      t.equal(response.status, 201);
      return response.body.id as string;
    };
    const a1 = await upload(alice.key, 'a1.txt');
    const a2 = await upload(alice.key, 'a2.txt', bob.memberId);
    const b1 = await upload(bob.key, 'b1.txt');
    const o1 = await upload(team.key, 'o1.txt', carol.memberId);
    const list = (key: string, query = '', headers: Record<string, string> = {}) => server.media('GET', `/v1/teams/${team.teamId}/files${query}`, key, { headers });

    const all = await list(carol.key);
    t.equal(all.status, 200);
    t.same(all.body.data.map((file: any) => file.id), [o1, b1, a2, a1], 'newest first; team.files.manage sees all');
    t.equal(all.body.count, 4);
    t.equal(all.body.usedTeamStorage, (await fileState(server, team.teamId)).usedStorage);
    t.same((await list(bob.key)).body.data.map((file: any) => file.id), [b1, a2], 'bob: uploaded by him or for him');
    t.same((await list(alice.key)).body.data.map((file: any) => file.id), [a2, a1]);
    t.same((await list(carol.key, `?uploadTeamMemberId=${alice.memberId}`)).body.data.map((file: any) => file.id), [a2, a1]);
    t.same((await list(carol.key, `?targetTeamMemberId=${bob.memberId}`)).body.data.map((file: any) => file.id), [a2]);
    t.same((await list(bob.key, `?uploadTeamMemberId=${alice.memberId}`)).body.data.map((file: any) => file.id), [a2], 'filters narrow what the key sees');
    const page = await list(carol.key, '', { pageNumber: '2', pageSize: '3' });
    t.same(page.body.data.map((file: any) => file.id), [a1]);
    t.equal(page.body.count, 4);
    expectError(t, await list(carol.key, '?uploadTeamMemberId=nope'), 400, 'error.badRequest');
    expectError(t, await list(carol.key, '?other=1'), 400, 'error.badRequest');

    t.equal((await server.media('GET', `/v1/teams/${team.teamId}/files/${a2}`, bob.key)).status, 200, 'the target reads a file for him');
    expectError(t, await server.media('GET', `/v1/teams/${team.teamId}/files/${a1}`, bob.key), 404, 'error.notFound');
    expectError(t, await server.media('DELETE', `/v1/teams/${team.teamId}/files/${a2}`, bob.key), 404, 'error.notFound');
    expectError(t, await server.media('DELETE', `/v1/teams/${team.teamId}/files/${b1}`, alice.key), 404, 'error.notFound');
    const viewer = await memberWithKey(server, team.teamId, 'viewer', ['team.media.view']);
    expectError(t, await teamFileJson(server, team.teamId, viewer.key, { file: 'AAAA', fileName: 'x.bin' }), 403, 'error.forbidden');
    const scoped = await memberWithKey(server, team.teamId, 'scoped', ['team.files.upload', 'team.media.upload'], { scopes: ['media:upload'] });
    expectError(t, await teamFileJson(server, team.teamId, scoped.key, { file: 'AAAA', fileName: 'x.bin' }), 403, 'error.forbidden');

    const own = await server.media('DELETE', `/v1/teams/${team.teamId}/files/${a1}`, alice.key);
    t.equal(own.status, 200, 'an uploader deletes its own file');
    const managed = await server.media('DELETE', `/v1/teams/${team.teamId}/files/${b1}`, carol.key);
    t.equal(managed.status, 200, 'team.files.manage deletes any');
    t.equal((await list(carol.key)).body.count, 2);
  });

  t.test('delete frees the storage, removes the object, logs TEAM_FILE_DELETED with the target', async (t) => {
    const team = await server.createTeam('Deletes');
    const target = await memberWithKey(server, team.teamId, 'dtarget', []);
    const content = pngLike(400 * KiB);
    const created = await teamFileJson(server, team.teamId, team.key, { file: content.toString('base64'), fileName: 'a.png', targetTeamMemberId: target.memberId });
    t.equal(created.body.usedTeamStorage, content.length);
    const preview = (await server.media('GET', `/v1/teams/${team.teamId}/files/${created.body.id}`, team.key)).body.previewUrl;
    const deleted = await server.media('DELETE', `/v1/teams/${team.teamId}/files/${created.body.id}`, team.key);
    t.equal(deleted.status, 200);
    t.same(deleted.body, { deleted: created.body.id, usedTeamStorage: 0 });
    t.match((await teamLogRows(server, team.teamId)).at(-1), { action: 'TEAM_FILE_DELETED', target_team_member_id: target.memberId, target_identifier: created.body.id });
    t.equal((await settledObjects(driver, server.dataDir, team.teamId, 0, 'team-files')).objects.length, 0, 'the object is gone');
    t.equal((await fetchBytes(preview)).status, 404, 'a preview link of a deleted file is 404');
    expectError(t, await server.media('DELETE', `/v1/teams/${team.teamId}/files/${created.body.id}`, team.key), 404, 'error.notFound');
    t.same(await fileState(server, team.teamId), { teamFiles: 0, todoFiles: 0, sumOfSizes: 0, usedStorage: 0, reservedStorage: 0, reservations: 0 });
  });

  t.test('refusals leave nothing: 400, 402 (file size, storage; by headers and mid-body), 404, 413, 415', async (t) => {
    const team = await server.createTeam('Refusals');
    await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxMediaFileSize: 512 * KiB });
    const before = await fileState(server, team.teamId);
    const json = (body: unknown) => teamFileJson(server, team.teamId, team.key, body);

    expectError(t, await json({ file: 'AAAA' }), 400, 'error.missingArgument.fileName');
    expectError(t, await json({ file: 'AAAA', fileName: '' }), 400, 'error.badRequest');
    expectError(t, await json({ file: 'AAAA', fileName: 'x'.repeat(256) }), 400, 'error.badRequest');
    expectError(t, await json({ file: 'AA*A', fileName: 'a.bin' }), 400, 'error.badRequest');
    expectError(t, await json({ fileName: 'a.bin' }), 400, 'error.missingArgument.file');
    expectError(t, await json({ file: 'AAAA', fileName: 'a.bin', targetTeamMemberId: 'nope' }), 400, 'error.badRequest');
    expectError(t, await json({ file: 'AAAA', fileName: 'a.bin', targetTeamMemberId: '00000000-0000-4000-8000-000000000000' }), 404, 'error.notFound');

    // 415: by content (whatever the name), by name, by the data URI's declared type.
    expectError(t, await json({ file: Buffer.from('<!DOCTYPE html><html><script>x</script>').toString('base64'), fileName: 'page.txt' }), 415, 'error.unsupportedMediaType');
    expectError(t, await json({ file: 'AAAA', fileName: 'run.sh' }), 415, 'error.unsupportedMediaType');
    expectError(t, await json({ file: 'data:text/html;base64,AAAA', fileName: 'a.bin' }), 415, 'error.unsupportedMediaType');
    expectError(t, await teamFileMultipart(server, team.teamId, team.key, Buffer.from('#!/bin/sh\necho hi\n'), 'a.txt'), 415, 'error.unsupportedMediaType');
    expectError(t, await teamFileMultipart(server, team.teamId, team.key, Buffer.from('fine'), 'a.txt', 'fileName=evil.exe'), 415, 'error.unsupportedMediaType');

    // 402 file size: by Content-Length before the body, and mid-body for a chunked one.
    expectError(t, await teamFileMultipart(server, team.teamId, team.key, pngLike(700 * KiB), 'big.png'), 402, 'error.teamLimits.maxMediaFileSize');
    const chunked = await sendChunked(
      `${server.baseUrl}/v1/teams/${team.teamId}/files`, { authorization: `Bearer ${team.key}`, 'content-type': 'application/json' }, 100 * MiB,
      Buffer.from('{"fileName":"big.bin","file":"'), Buffer.from('A'.repeat(64 * KiB)), Buffer.from('"}'),
    );
    t.equal(chunked.status, 402);
    t.equal(chunked.body.messageKey, 'error.teamLimits.maxMediaFileSize');
    t.ok(chunked.sent < 32 * MiB, `refused after ${Math.round(chunked.sent / MiB)} MiB of the 100 MiB body`);

    // By Content-Length alone, answered before any body byte is sent: 413 past the route's limit, 402 past the file size limit.
    t.equal((await headersOnly(`/v1/teams/${team.teamId}/files`, team.key, 'application/json', 200 * 1_000_000)).status, 413);
    const tooLarge = await headersOnly(`/v1/teams/${team.teamId}/files/multipart`, team.key, 'multipart/form-data; boundary=x', 10 * 1_000_000);
    t.equal(tooLarge.status, 402);
    t.equal(tooLarge.body.messageKey, 'error.teamLimits.maxMediaFileSize');

    // 402 storage: the team storage is nearly full.
    await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxTeamStorage: 100, maxMediaFileSize: null });
    expectError(t, await teamFileMultipart(server, team.teamId, team.key, pngLike(200 * KiB), 'full.png'), 402, 'error.teamLimits.maxTeamStorage');
    const fits = await json({ file: pngLike(90 * KiB).toString('base64'), fileName: 'fits.png' });
    t.equal(fits.status, 201, 'a file that fits lands');
    const over = await json({ file: pngLike(20 * KiB).toString('base64'), fileName: 'over.png' });
    expectError(t, over, 402, 'error.teamLimits.maxTeamStorage');
    const media = await uploadJson(server, team.teamId, team.key, { file: pngLike(20 * KiB).toString('base64'), fileName: 'over.png' });
    expectError(t, media, 402, 'error.teamLimits.maxTeamStorage');
    await server.media('DELETE', `/v1/teams/${team.teamId}/files/${fits.body.id}`, team.key);
    await expectNothingLeft(t, team.teamId, before);
  });

  t.test('a client that aborts mid-body leaves nothing (reservation released, write aborted)', async (t) => {
    const team = await server.createTeam('Aborts');
    const before = await fileState(server, team.teamId);
    const { body, contentType } = multipartBody([{ content: pngLike(6 * MiB), fileName: 'aborted.png' }]);
    const request = httpRequest(`${server.baseUrl}/v1/teams/${team.teamId}/files/multipart`, {
      method: 'POST', headers: { authorization: `Bearer ${team.key}`, 'content-type': contentType, 'content-length': String(body.length) },
    });
    request.on('error', () => undefined);
    request.write(body.subarray(0, 3 * MiB));
    // Wait until the upload holds a reservation for its team-files key, then leave.
    let reserved: string | null = null;
    for (let attempt = 0; attempt < 100 && reserved === null; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      const client = await connectPg(server.databaseUrl);
      const { rows } = await client.query('select storage_key from upload_reservation where team_id = $1', [team.teamId]);
      await client.end();
      reserved = rows[0]?.storage_key ?? null;
    }
    t.match(reserved, new RegExp(`^team-files/${team.teamId}/`), 'the upload reserved storage under its team-files key');
    request.destroy();
    for (let attempt = 0; attempt < 100 && (await fileState(server, team.teamId)).reservations > 0; attempt++) await new Promise((resolve) => setTimeout(resolve, 50));
    await expectNothingLeft(t, team.teamId, before);
  });

  t.test('storage reconcile recomputes across media, team files and to-do files', async (t) => {
    const team = await server.createTeam('Reconcile');
    t.equal((await uploadJson(server, team.teamId, team.key, { file: pngLike(1000).toString('base64'), fileName: 'm.png' })).status, 201);
    t.equal((await teamFileJson(server, team.teamId, team.key, { file: pngLike(2000).toString('base64'), fileName: 't.png' })).status, 201);
    const client = await connectPg(server.databaseUrl);
    await client.query('update team set used_storage = 5 where id = $1', [team.teamId]);
    await client.end();
    const [report] = await reconcileStorage(server.app.services.orm, { teamId: team.teamId });
    t.match(report, { counted: 5, actual: 3000, repaired: true });
    t.equal((await fileState(server, team.teamId)).usedStorage, 3000);
  });
}
