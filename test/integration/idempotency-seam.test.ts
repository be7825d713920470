// runIdempotent (src/uploads/idempotency/run-idempotent.ts), the seam other routes (upload URLs, tus creation) wire
// into, against the real database of a running service: replay with the kept headers, 409 while
// the work runs, 422 for another request, a failure or an error answer frees the key, an answer
// recorded by the work in its own transaction.
import t from 'tap';
import { fingerprintOf } from '../../src/uploads/idempotency/idempotency-key.ts';
import { runIdempotent } from '../../src/uploads/idempotency/run-idempotent.ts';
import type { HttpRequest, HttpResult } from '../../src/http/types.ts';
import { ServiceError } from '../../src/errors/service-error.ts';
import { badRequest } from '../../src/errors/errors.ts';
import { startTestServer } from '../helpers/server.ts';
import { eventually } from '../helpers/wait.ts';

const server = await startTestServer(t);
const team = await server.createTeam('Seam');
const { idempotency, metrics, orm } = server.app.services;
const deps = { idempotency, metrics };
const ROUTE = 'POST /v1/cdn/media/:teamId/things';

function requestWith(key: string | null): HttpRequest {
  return { headers: key === null ? {} : { 'idempotency-key': key } } as unknown as HttpRequest;
}

function call(key: string | null, input: unknown, work: () => Promise<HttpResult & { recorded?: boolean }>) {
  return runIdempotent(deps, requestWith(key), { teamId: team.teamId, route: ROUTE, fingerprint: fingerprintOf(input), keptHeaders: ['Location'] }, work);
}

async function rejection(promise: Promise<unknown>): Promise<ServiceError | undefined> {
  try {
    await promise;
    return undefined;
  } catch (error) {
    return error as ServiceError;
  }
}

t.test('the first answer is recorded and replayed with its kept headers; the work runs once', async (t) => {
  let runs = 0;
  const work = async () => {
    runs++;
    return { status: 201, body: { id: `thing-${runs}`, n: 1 }, headers: { Location: '/things/1', 'X-Transient': 'x' } };
  };
  const first = await call('seam-1', { name: 'a' }, work);
  t.same(first, { status: 201, body: { id: 'thing-1', n: 1 }, headers: { Location: '/things/1', 'X-Transient': 'x' } });
  const again = await call('seam-1', { name: 'a' }, work);
  t.equal(runs, 1, 'the work ran once');
  t.same(again, { status: 201, body: { id: 'thing-1', n: 1 }, headers: { Location: '/things/1', 'Idempotent-Replayed': 'true' } }, 'replayed; only kept headers');
  const reused = await rejection(call('seam-1', { name: 'b' }, work));
  t.match(reused, { status: 422, messageKey: 'error.media.idempotencyKeyReused' }, 'another request: 422');
  const values = (await metrics.idempotentReplays.get()).values;
  t.equal(values.find((value) => value.labels.route === '/v1/cdn/media/:teamId/things')?.value, 1, 'the replay is counted by route pattern');

  await call(null, { name: 'a' }, work);
  await call(null, { name: 'a' }, work);
  t.equal(runs, 3, 'without a key the work always runs');
});

t.test('409 while the first runs; a failure or an error answer frees the key', async (t) => {
  let finish: (() => void) | null = null;
  const running = call('seam-2', {}, () => new Promise((resolve) => (finish = () => resolve({ status: 200, body: { ok: true } }))));
  t.ok(await eventually(() => finish !== null), 'the first holds the key and runs');
  const inFlight = await rejection(call('seam-2', {}, async () => ({ status: 200, body: { ok: false } })));
  t.match(inFlight, { status: 409, messageKey: 'error.media.idempotencyInFlight' });
  finish!();
  t.same((await running).body, { ok: true });

  const thrown = await rejection(call('seam-3', {}, async () => {
    throw badRequest('nope');
  }));
  t.equal(thrown?.status, 400, 'the work\'s error goes through');
  t.same((await call('seam-3', {}, async () => ({ status: 201, body: { second: true } }))).body, { second: true }, 'its key was freed');

  t.equal((await call('seam-4', {}, async () => ({ status: 402, body: { refused: true } }))).status, 402);
  t.same((await call('seam-4', {}, async () => ({ status: 201, body: { later: true } }))).body, { later: true }, 'an error answer frees the key too');
});

t.test('work may record its answer in its own transaction', async (t) => {
  const em = orm.em.fork();
  const first = await runIdempotent(
    deps, requestWith('seam-5'), { teamId: team.teamId, route: ROUTE, fingerprint: fingerprintOf({}) },
    async (claim) =>
      em.transactional(async (tx) => {
        const answer = { status: 201, body: { inTransaction: true } };
        t.ok(await idempotency.complete(claim!, answer, tx), 'recorded');
        return { ...answer, recorded: true };
      }),
  );
  t.same(first, { status: 201, body: { inTransaction: true } }, 'the recorded flag is not answered');
  const replay = await call('seam-5', {}, async () => ({ status: 500, body: {} }));
  t.same(replay.body, { inTransaction: true });
  t.equal(replay.headers?.['Idempotent-Replayed'], 'true');
});
