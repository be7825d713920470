import t from 'tap';
import { connectPg } from '../helpers/database.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { driverSettings, settledObjects } from '../helpers/storage.ts';
import { KiB, multipartBody, pngLike, send, uploadJson } from '../helpers/uploads.ts';
import { fileState, teamFileJson } from './team-files-suite.ts';

// One storage quota for every kind of file (issue 14.3): a mixed burst of media and team-file
// uploads into a nearly full team, spread over two instances sharing the database and storage,
// never passes maxTeamStorage, and the counter ends equal to the sum of what is stored.

const settings = { ...driverSettings('fs'), RATE_LIMIT_POINTS: 100_000 };
const first = await startTestServer(t, { settings });
const second = await startTestServer(t, { settings, databaseUrl: first.databaseUrl, dataDir: first.dataDir });

function teamFileMultipart(server: TestServer, teamId: string, key: string, content: Buffer, fileName: string) {
  const { body, contentType } = multipartBody([{ content, fileName }]);
  return send(server, 'POST', `/v1/teams/${teamId}/files/multipart`, key, body, { 'content-type': contentType });
}

function mediaMultipart(server: TestServer, teamId: string, key: string, content: Buffer, fileName: string) {
  const { body, contentType } = multipartBody([{ content, fileName }]);
  return send(server, 'POST', `/v1/cdn/media/${teamId}/upload/file`, key, body, { 'content-type': contentType });
}

t.test('a mixed burst of media and team files on two instances: the quota holds exactly', async (t) => {
  const team = await first.createTeam('MixedBurst');
  const limitKib = 2000;
  await first.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxTeamStorage: limitKib, maxMediaFileSize: null });
  // Nearly full: half of the storage is taken before the burst.
  t.equal((await uploadJson(first, team.teamId, team.key, { file: pngLike(1000 * KiB).toString('base64'), fileName: 'fill.png' })).status, 201);

  // 48 uploads, both kinds on both instances and both body formats; every sixth is large enough
  // to be reserved while it streams (above 256 KiB), the others commit on the conditional update alone.
  const uploads = Array.from({ length: 48 }, (_, i) => {
    const server = i % 2 === 0 ? first : second;
    const size = i % 6 === 0 ? 300 * KiB + i : 20 * KiB + i * 97;
    const content = pngLike(size);
    const kind = i % 4 < 2 ? 'media' : 'teamFile';
    const multipart = i % 3 === 0;
    const request =
      kind === 'media'
        ? multipart ? mediaMultipart(server, team.teamId, team.key, content, `m${i}.png`) : uploadJson(server, team.teamId, team.key, { file: content.toString('base64'), fileName: `m${i}.png` })
        : multipart ? teamFileMultipart(server, team.teamId, team.key, content, `f${i}.png`) : teamFileJson(server, team.teamId, team.key, { file: content.toString('base64'), fileName: `f${i}.png` });
    return { kind, size, request };
  });
  const responses = await Promise.all(uploads.map((upload) => upload.request));
  const statuses = responses.map((response) => response.status);
  t.ok(statuses.every((status) => status === 201 || status === 402), `each landed or got 402: ${statuses.join(',')}`);
  for (const response of responses.filter((r) => r.status === 402)) t.equal(response.body.messageKey, 'error.teamLimits.maxTeamStorage');
  const landed = uploads.filter((_, i) => statuses[i] === 201);
  t.ok(landed.some((upload) => upload.kind === 'media') && landed.some((upload) => upload.kind === 'teamFile'), 'both kinds landed');
  t.ok(statuses.includes(402), 'the burst did not all fit');

  const state = await fileState(first, team.teamId);
  const landedBytes = 1000 * KiB + landed.reduce((sum, upload) => sum + upload.size, 0);
  t.ok(state.usedStorage <= limitKib * 1024, `never past the limit: ${state.usedStorage} of ${limitKib * 1024}`);
  t.equal(state.usedStorage, state.sumOfSizes, 'the counter equals the sum of the stored files of every kind');
  t.equal(state.sumOfSizes, landedBytes, 'the stored files are exactly the answered ones');
  t.equal(state.reservedStorage, 0, 'nothing left reserved');
  t.equal(state.reservations, 0);
  t.equal(state.teamFiles, landed.filter((upload) => upload.kind === 'teamFile').length, 'one team file row per team-file 201');
  const client = await connectPg(first.databaseUrl);
  const media = await client.query('select count(*)::int as count from media_file where team_id = $1', [team.teamId]);
  await client.end();
  t.equal(media.rows[0].count, 1 + landed.filter((upload) => upload.kind === 'media').length, 'one media row per media 201');
  t.equal((await settledObjects('fs', first.dataDir, team.teamId, state.teamFiles, 'team-files')).objects.length, state.teamFiles, 'only stored team files are kept');
  t.equal((await settledObjects('fs', first.dataDir, team.teamId, media.rows[0].count)).objects.length, media.rows[0].count, 'only stored media are kept');
  // Every 201 names the used storage right after its own commit: the largest is the counter.
  t.equal(Math.max(...responses.filter((r) => r.status === 201).map((r) => r.body.usedTeamStorage as number)), state.usedStorage);
  const usage = await second.media('GET', `/v1/cdn/media/${team.teamId}/usage`, team.key);
  t.equal(usage.body.storage.usedBytes, usage.body.storage.mediaBytes + usage.body.storage.teamFileBytes + usage.body.storage.todoFileBytes, 'the usage split adds up');
});
