import t from 'tap';
import { expectError, startTestServer } from '../helpers/server.ts';
import { heldUpload, multipartBody, send, teamStorageState, uploadJson, uploadMultipart, uploadPath } from '../helpers/uploads.ts';
import { eventually, sleep } from '../helpers/wait.ts';

const settle = (ms = 150) => sleep(ms);

t.test('past UPLOAD_CONCURRENCY and UPLOAD_QUEUE_LIMIT uploads get 503 uploadBusy with Retry-After, and nothing is stored', async (t) => {
  const server = await startTestServer(t, { settings: { UPLOAD_CONCURRENCY: 1, UPLOAD_QUEUE_LIMIT: 1 } });
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
  const server = await startTestServer(t, { settings: { UPLOAD_CONCURRENCY: 1, UPLOAD_QUEUE_LIMIT: 1, UPLOAD_RETRY_AFTER_SECONDS: 9 } });
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
