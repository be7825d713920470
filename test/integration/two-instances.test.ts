import t from 'tap';
import { connectPg } from '../helpers/database.ts';
import { startTestServer } from '../helpers/server.ts';
import { driverSettings, settledObjects } from '../helpers/storage.ts';
import { MiB, pngLike, teamStorageState, uploadJson, uploadMultipart } from '../helpers/uploads.ts';

// Two instances of one deployment: one database, one S3 bucket.
const settings = { ...driverSettings('s3'), RATE_LIMIT_POINTS: 100_000 };
const first = await startTestServer(t, { settings });
const second = await startTestServer(t, { settings, databaseUrl: first.databaseUrl });

t.test('parallel uploads of one team through both instances never pass the storage limit', async (t) => {
  const team = await first.createTeam('TwoQuota', 'enterprise');
  await first.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxTeamStorage: 6 * 1024 });
  const content = pngLike(MiB);
  const responses = await Promise.all(
    Array.from({ length: 16 }, (_, i) => {
      const target = i % 2 === 0 ? first : second;
      return i % 4 < 2
        ? uploadMultipart(target, team.teamId, team.key, { content, fileName: `q${i}.png` })
        : uploadJson(target, team.teamId, team.key, { file: content.toString('base64'), fileName: `q${i}.png` });
    }),
  );
  const created = responses.filter((response) => response.status === 201).length;
  t.equal(created + responses.filter((response) => response.status === 402).length, 16, 'each landed or got 402');
  t.equal(created, 6, 'exactly as many as fit');
  const state = await teamStorageState(first.databaseUrl, team.teamId);
  t.equal(state.usedStorage, state.sumOfSizes, 'the counter equals the sum of the stored files');
  t.equal(state.reservedStorage, 0);
  t.equal(state.reservations, 0);
  t.equal((await settledObjects('s3', first.dataDir, team.teamId, created)).objects.length, created, 'the bucket holds exactly the landed files');
});

t.test('concurrent uploads into the same new folder path through both instances create one folder tree', async (t) => {
  const team = await first.createTeam('TwoFolders', 'enterprise');
  const path = encodeURIComponent('fleet/eu-west/2026/11/21');
  const responses = await Promise.all(
    Array.from({ length: 12 }, (_, i) =>
      uploadMultipart(i % 2 === 0 ? first : second, team.teamId, team.key, { content: pngLike(1000), fileName: `f${i}.png` }, `folder=${path}`),
    ),
  );
  t.same(responses.map((response) => response.status), Array(12).fill(201));
  t.equal(new Set(responses.map((response) => response.body.folderId)).size, 1, 'every file is in the same folder');
  const client = await connectPg(first.databaseUrl);
  t.teardown(() => client.end());
  const folders = await client.query<{ count: string }>('select count(*) from media_folder where team_id = $1', [team.teamId]);
  t.equal(Number(folders.rows[0]!.count), 5, 'one folder per level, no duplicates');
});
