import t from 'tap';
import { startTestServer } from '../helpers/server.ts';
import { closeS3Client, DRIVERS_OF_THIS_PASS, driverSettings } from '../helpers/storage.ts';
import { tableSnapshot } from '../helpers/team-admin.ts';
import { fillTeam, rowsOfTeam, storageOfTeam } from './team-delete-suite.ts';

// A crash between the commit that deletes a team's rows and the removal of its objects: the keys
// wait in storage_deletion, and the next drain (any instance, at start or on its timer) removes them.
t.teardown(closeS3Client);

for (const driver of DRIVERS_OF_THIS_PASS) {
  t.test(`${driver}: rows go in one commit, the objects stay queued until a drain removes them`, async (t) => {
    const server = await startTestServer(t, { settings: { ...driverSettings(driver), RATE_LIMIT_POINTS: 100_000 } });
    const { orm, teamDeletion } = server.app.services;
    const team = await server.createTeam('Doomed');
    const survivor = await server.createTeam('Survivor');
    const { tusId } = await fillTeam(t, server, team);
    await fillTeam(t, server, survivor);
    t.ok((await storageOfTeam(driver, server.dataDir, team.teamId, tusId)).length >= 5, 'the team has objects');
    const survivorRows = await rowsOfTeam(server, survivor.teamId);

    // The "crash": the transaction commits, the drain never runs.
    const { queued } = await orm.em.fork().transactional((em) => teamDeletion.deleteRows(em, team.teamId));
    t.equal(queued, 5, 'two media files, a team file, a to-do file, a resumable upload');
    t.same(await rowsOfTeam(server, team.teamId), {}, 'no row names the team');
    t.ok((await storageOfTeam(driver, server.dataDir, team.teamId, tusId)).length > 0, 'its objects are still stored');
    t.equal(JSON.parse(await tableSnapshot(server, 'select count(*)::int as n from storage_deletion', []))[0].n, 5, 'and queued');

    t.equal(await teamDeletion.drain(), 5);
    t.same(await storageOfTeam(driver, server.dataDir, team.teamId, tusId), [], 'nothing of the team is left in storage');
    t.equal(JSON.parse(await tableSnapshot(server, 'select count(*)::int as n from storage_deletion', []))[0].n, 0, 'queue empty');
    t.same(await rowsOfTeam(server, survivor.teamId), survivorRows, 'the other team keeps everything');
    t.equal((await server.media('GET', `/v1/cdn/media/${survivor.teamId}`, survivor.key)).body.media.length, 2, 'and its media');
    t.equal(await teamDeletion.drain(), 0, 'a second drain has nothing to do');
  });
}

t.test('a failing removal stays queued with its error and is retried', async (t) => {
  const server = await startTestServer(t);
  const { orm, teamDeletion } = server.app.services;
  await teamDeletion.stop(); // the drain at start-up has run; no timer drains behind the test's back
  await orm.em.fork().execute(
    `insert into storage_deletion (id, kind, storage_key, reason, created_at) values (gen_random_uuid(), 'object', '../escape', 'TEAM_DELETE', now())`,
  );
  t.equal(await teamDeletion.drain(), 0);
  const rows = JSON.parse(await tableSnapshot(server, 'select attempts, last_error from storage_deletion', []));
  t.equal(rows.length, 1);
  t.equal(rows[0].attempts, 1);
  t.match(rows[0].last_error, /invalid/i);
  t.equal(await teamDeletion.drain(), 0);
  t.equal(JSON.parse(await tableSnapshot(server, 'select attempts from storage_deletion', []))[0].attempts, 2, 'tried again by the next drain');
});
