import t from 'tap';
import { expectError, startTestServer } from '../helpers/server.ts';
import { heldUpload, multipartBody, send, teamStorageState, uploadJson, uploadMultipart, uploadPath } from '../helpers/uploads.ts';
import { eventually, sleep } from '../helpers/wait.ts';

const settle = (ms = 150) => sleep(ms);

t.test('past UPLOAD_CONCURRENCY and UPLOAD_QUEUE_LIMIT uploads get 503 uploadBusy with Retry-After, and nothing is stored', async (t) => {
  const server = await startTestServer(t, { settings: { UPLOAD_CONCURRENCY: 1, UPLOAD_QUEUE_LIMIT: 1, UPLOAD_TEAM_MAX_SHARE: 1 } });
  const team = await server.createTeam('Gate');
  const content = Buffer.alloc(64 * 1024, 7);

  const gate = server.app.services.gate;
  const running = heldUpload(server, team.teamId, team.key, content);
  t.ok(await eventually(() => gate.running === 1), 'one upload runs');
  const waiting = heldUpload(server, team.teamId, team.key, content);
  waiting.finish(); // its whole body is sent, but it waits for a slot
  t.ok(await eventually(() => gate.waiting === 1), 'one upload waits');

  const before = await teamStorageState(server.databaseUrl, team.teamId);
  const busyMultipart = await uploadMultipart(server, team.teamId, team.key, { content, fileName: 'busy.bin' });
  expectError(t, busyMultipart, 503, 'error.media.uploadBusy');
  t.equal(busyMultipart.headers.get('retry-after'), '5', 'Retry-After: UPLOAD_RETRY_AFTER_SECONDS (default 5)');
  const busyJson = await uploadJson(server, team.teamId, team.key, { file: content.toString('base64'), fileName: 'busy.bin' });
  expectError(t, busyJson, 503, 'error.media.uploadBusy');
  t.same(await teamStorageState(server.databaseUrl, team.teamId), before, 'the refused uploads stored nothing');

  let waitingDone = false;
  void waiting.response.then(() => (waitingDone = true));
  await settle();
  t.notOk(waitingDone, 'the waiting upload does not finish while the slot is taken');

  running.finish();
  t.equal((await running.response).status, 201, 'the running upload lands');
  t.equal((await waiting.response).status, 201, 'then the waiting one');
  const after = await teamStorageState(server.databaseUrl, team.teamId);
  t.equal(after.files, 2);
  t.equal(after.usedStorage, after.sumOfSizes);
});

// A paused socket is not polled, so its disconnect is noticed when its turn comes: it is then
// dropped at once and the queue moves on.
t.test('a client that gives up while waiting does not hold up the queue', async (t) => {
  const server = await startTestServer(t, { settings: { UPLOAD_CONCURRENCY: 1, UPLOAD_QUEUE_LIMIT: 1, UPLOAD_TEAM_MAX_SHARE: 1, UPLOAD_RETRY_AFTER_SECONDS: 9 } });
  const team = await server.createTeam('GateAbort');
  const content = Buffer.alloc(1024, 1);
  const gate = server.app.services.gate;
  const running = heldUpload(server, team.teamId, team.key, content);
  t.ok(await eventually(() => gate.running === 1), 'one upload runs');
  const waiting = heldUpload(server, team.teamId, team.key, content);
  waiting.response.catch(() => undefined);
  t.ok(await eventually(() => gate.waiting === 1), 'one upload waits');
  const busy = await uploadMultipart(server, team.teamId, team.key, { content, fileName: 'x.bin' });
  t.equal(busy.headers.get('retry-after'), '9', 'Retry-After follows UPLOAD_RETRY_AFTER_SECONDS');
  waiting.request.destroy();
  running.finish();
  t.equal((await running.response).status, 201);
  t.ok(await eventually(() => gate.running + gate.waiting === 0), 'the abandoned upload was dropped when its turn came');
  const next = await uploadMultipart(server, team.teamId, team.key, { content, fileName: 'next.bin' });
  t.equal(next.status, 201, 'the next upload runs');
  t.equal((await teamStorageState(server.databaseUrl, team.teamId)).files, 2, 'the abandoned upload stored nothing');
});

t.test('the upload routes have the per-key rate limit, before the gate', async (t) => {
  const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 2, RATE_LIMIT_DURATION_SECONDS: 60 } });
  const team = await server.createTeam('UploadRate');
  const content = Buffer.from('data');
  t.equal((await uploadMultipart(server, team.teamId, team.key, { content, fileName: 'a.bin' })).status, 201);
  t.equal((await uploadJson(server, team.teamId, team.key, { file: content.toString('base64'), fileName: 'b.bin' })).status, 201);
  const limited = await uploadMultipart(server, team.teamId, team.key, { content, fileName: 'c.bin' });
  expectError(t, limited, 429, 'error.tooManyRequests');
  t.ok(Number(limited.headers.get('retry-after')) >= 1);
  const { body, contentType } = multipartBody([{ content, fileName: 'd.bin' }]);
  expectError(t, await send(server, 'POST', uploadPath(team.teamId), team.key, body, { 'content-type': contentType }), 429, 'error.tooManyRequests');
  t.equal((await teamStorageState(server.databaseUrl, team.teamId)).files, 2, 'limited uploads stored nothing');
});

// Fairness between teams: one team's share of the places (running + waiting) is capped, so a team
// with many keys cannot take every place of the instance.
t.test('a team past UPLOAD_TEAM_MAX_SHARE of the places gets 503 uploadBusy while another team is still admitted', async (t) => {
  // 1 running + 3 waiting places; a share of 0.5 lets one team hold 2 of them.
  const server = await startTestServer(t, { settings: { UPLOAD_CONCURRENCY: 1, UPLOAD_QUEUE_LIMIT: 3, UPLOAD_TEAM_MAX_SHARE: 0.5 } });
  const busyTeam = await server.createTeam('Busy');
  // Many keys do not buy a team more places: the share is per team.
  const secondKey = await server.admin('POST', `/v1/admin/teams/${busyTeam.teamId}/api-keys`, { description: 'game server 2' });
  t.equal(secondKey.status, 201);
  const otherKey: string = secondKey.body.key;
  const quietTeam = await server.createTeam('Quiet');
  const content = Buffer.alloc(16 * 1024, 3);
  const gate = server.app.services.gate;
  t.equal(gate.teamLimit, 2, 'floor(0.5 x (1 + 3))');

  const running = heldUpload(server, busyTeam.teamId, busyTeam.key, content);
  t.ok(await eventually(() => gate.running === 1), 'the busy team runs one upload');
  const waiting = heldUpload(server, busyTeam.teamId, otherKey, content);
  waiting.finish();
  t.ok(await eventually(() => gate.waiting === 1), 'and has one waiting');
  t.equal(gate.heldBy(busyTeam.teamId), 2);

  const before = await teamStorageState(server.databaseUrl, busyTeam.teamId);
  const refused = await uploadMultipart(server, busyTeam.teamId, otherKey, { content, fileName: 'third.bin' });
  expectError(t, refused, 503, 'error.media.uploadBusy');
  t.equal(refused.headers.get('retry-after'), '5', 'with Retry-After');
  t.match(refused.body.message, /team/, 'the message says it is the team share');
  const refusedJson = await uploadJson(server, busyTeam.teamId, busyTeam.key, { file: content.toString('base64'), fileName: 'third.bin' });
  expectError(t, refusedJson, 503, 'error.media.uploadBusy');
  t.same(await teamStorageState(server.databaseUrl, busyTeam.teamId), before, 'the refused uploads stored nothing');
  t.equal(gate.waiting, 1, 'the instance still has free waiting places');

  // The other team is admitted: it waits for the slot and lands after the busy team's uploads.
  const quiet = uploadMultipart(server, quietTeam.teamId, quietTeam.key, { content, fileName: 'quiet.bin' });
  t.ok(await eventually(() => gate.waiting === 2), 'the other team waits for a slot instead of being refused');
  running.finish();
  t.equal((await running.response).status, 201);
  t.equal((await waiting.response).status, 201);
  t.equal((await quiet).status, 201, "the other team's upload lands");
  t.ok(await eventually(() => gate.running + gate.waiting === 0 && gate.heldBy(busyTeam.teamId) === 0), 'every place is given back');

  // Its places given back, the busy team is admitted again.
  t.equal((await uploadMultipart(server, busyTeam.teamId, busyTeam.key, { content, fileName: 'again.bin' })).status, 201);
});

t.test('a waiting upload whose client leaves gives its team place back', async (t) => {
  const server = await startTestServer(t, { settings: { UPLOAD_CONCURRENCY: 1, UPLOAD_QUEUE_LIMIT: 3, UPLOAD_TEAM_MAX_SHARE: 0.5 } });
  const team = await server.createTeam('Leaver');
  const content = Buffer.alloc(1024, 2);
  const gate = server.app.services.gate;
  const running = heldUpload(server, team.teamId, team.key, content);
  t.ok(await eventually(() => gate.running === 1));
  const waiting = heldUpload(server, team.teamId, team.key, content);
  waiting.response.catch(() => undefined);
  t.ok(await eventually(() => gate.waiting === 1));
  waiting.request.destroy();
  running.finish();
  t.equal((await running.response).status, 201);
  t.ok(await eventually(() => gate.running + gate.waiting === 0), 'the abandoned upload was dropped');
  t.ok(await eventually(() => gate.heldBy(team.teamId) === 0), 'and its team place given back');
  const again = [heldUpload(server, team.teamId, team.key, content), heldUpload(server, team.teamId, team.key, content)];
  for (const held of again) held.finish();
  t.same(await Promise.all(again.map(async (held) => (await held.response).status)), [201, 201], 'the team holds two places again');
});
