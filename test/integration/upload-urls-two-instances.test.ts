import t from 'tap';
import { connectPg } from '../helpers/database.ts';
import { startTestServer } from '../helpers/server.ts';
import { driverSettings, settledObjects } from '../helpers/storage.ts';
import { memberWithKey } from '../helpers/team-admin.ts';
import { createUploadUrl, heldRawUpload, postFormToUrl, postToUrl } from '../helpers/upload-urls.ts';
import { pngLike, teamStorageState } from '../helpers/uploads.ts';
import { eventually } from '../helpers/wait.ts';

// Two instances of one deployment (one database, one bucket): an upload URL works once across both.
const settings = { ...driverSettings('s3'), RATE_LIMIT_POINTS: 100_000, UPLOAD_URL_TEAM_RATE_LIMIT_POINTS: 100_000 };
const first = await startTestServer(t, { settings });
const second = await startTestServer(t, { settings, databaseUrl: first.databaseUrl });

/** The URL as if made by `target` (both instances sign with the same operator secret). */
const through = (url: string, target: { baseUrl: string }) => url.replace(first.baseUrl, target.baseUrl);

t.test('two uses racing on two instances store one file per URL', async (t) => {
  const team = await first.createTeam('Race');
  const urls = await Promise.all(Array.from({ length: 8 }, (_, i) => createUploadUrl(first, team.teamId, team.key, { fileName: `race${i}.png` })));
  const answers = await Promise.all(
    urls.flatMap(({ url }, i) => [
      postFormToUrl(url, [{ content: pngLike(64 * 1024 + i) }]),
      postToUrl(through(url, second), pngLike(64 * 1024 + i), { 'content-type': 'image/png' }),
    ]),
  );
  for (let i = 0; i < urls.length; i++) {
    const pair = [answers[2 * i]!, answers[2 * i + 1]!];
    t.equal(pair.filter((answer) => answer.status === 201).length, 1, `URL ${i}: exactly one upload landed`);
    const loser = pair.find((answer) => answer.status !== 201)!;
    t.ok([409, 410].includes(loser.status), `URL ${i}: the other got ${loser.status}`);
    t.match(loser.body.messageKey, /^error\.media\.uploadUrl(InUse|Used)$/);
  }
  const state = await teamStorageState(first.databaseUrl, team.teamId);
  t.equal(state.files, urls.length, 'one file per URL');
  t.equal(state.usedStorage, state.sumOfSizes, 'counted once each');
  t.equal((await settledObjects('s3', first.dataDir, team.teamId, urls.length)).objects.length, urls.length, 'the bucket holds one object per URL');
});

t.test('while an upload runs on one instance, the other answers 409; afterwards 410', async (t) => {
  const team = await first.createTeam('Held');
  const { url } = await createUploadUrl(first, team.teamId, team.key, { fileName: 'held.png' });
  const held = heldRawUpload(url, pngLike(300 * 1024));
  const db = await connectPg(first.databaseUrl);
  t.teardown(() => db.end());
  const urlId = new URL(url).pathname.split('/').pop();
  t.ok(await eventually(async () => (await db.query(`select 1 from upload_url where id = $1 and state = 'claimed'`, [urlId])).rowCount === 1), 'claimed on the first instance');
  const answer = await postToUrl(through(url, second), pngLike(100), { 'content-type': 'image/png' });
  t.equal(answer.status, 409, 'in use, seen from the other instance');
  t.equal(answer.body.messageKey, 'error.media.uploadUrlInUse');
  held.finish();
  t.equal((await held.response).status, 201);
  const after = await postToUrl(through(url, second), pngLike(100), { 'content-type': 'image/png' });
  t.equal(after.status, 410);
  t.equal(after.body.messageKey, 'error.media.uploadUrlUsed');
  t.equal((await teamStorageState(first.databaseUrl, team.teamId)).files, 1);
});

t.test('a maker losing access on one instance: its URL is refused on the other at once, though the other had its key cached', async (t) => {
  const team = await first.createTeam('Revoked');
  const rerolled = await memberWithKey(first, team.teamId, 'rerolled', ['team.media.upload']);
  const demoted = await memberWithKey(first, team.teamId, 'demoted', ['team.media.upload']);
  const cases = [
    { member: rerolled, loseAccess: () => first.admin('POST', `/v1/admin/api-keys/${rerolled.keyId}/reroll`) },
    {
      member: demoted,
      loseAccess: () => first.media('PATCH', `/v1/teams/${team.teamId}/members/${demoted.memberId}`, team.key, { body: { permissions: ['team.media.view'] } }),
    },
  ];
  for (const { member, loseAccess } of cases) {
    const url = await createUploadUrl(first, team.teamId, member.key, { fileName: 'later.png' });
    // A use on the second instance caches the maker's key there (API_KEY_CACHE_SECONDS, 30 s by default).
    const warm = await createUploadUrl(first, team.teamId, member.key, { fileName: 'now.png' });
    t.equal((await postToUrl(through(warm.url, second), pngLike(1000), { 'content-type': 'image/png' })).status, 201, 'works on the second instance');
    const before = await teamStorageState(first.databaseUrl, team.teamId);
    t.equal((await loseAccess()).status, 200, 'access lost on the first instance');
    // The notification takes a moment to arrive: the member's own key on the second instance shows when it did
    // (long before the 30 s its cache would otherwise keep the key).
    const creation = () => second.media('POST', `/v1/cdn/media/${team.teamId}/upload-urls`, member.key, { body: {} });
    t.ok(await eventually(async () => [401, 403].includes((await creation()).status), 5000), 'the second instance heard of the change');
    const refused = await postToUrl(through(url.url, second), pngLike(2000), { 'content-type': 'image/png' });
    t.equal(refused.status, 403, 'refused on the second instance');
    t.equal(refused.body.messageKey, 'error.media.uploadUrlRevoked');
    t.same(await teamStorageState(first.databaseUrl, team.teamId), before, 'nothing stored or counted');
  }
});
