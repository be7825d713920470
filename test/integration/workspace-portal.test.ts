import t from 'tap';
import type { TxtResolver } from '../../src/domain/portal/txt-resolver.ts';
import { expectError, startTestServer } from '../helpers/server.ts';
import { memberWithKey, tableSnapshot } from '../helpers/team-admin.ts';

// The portal environment: subdomain rules and uniqueness (also between two instances), the
// subdomain change cool-down, the custom domain's TXT verification and the public portal pages.
// DNS: no dependency of the repository runs a DNS server in-process, so the TXT lookups go to a
// stub passed through the service's composition (startTestServer's txtResolver); production uses
// node:dns/promises (src/domain/portal/txt-resolver.ts).
const txtRecords = new Map<string, string[][] | string>();
const resolver: TxtResolver = {
  async resolveTxt(name) {
    const records = txtRecords.get(name);
    if (typeof records === 'string') throw Object.assign(new Error(`queryTxt ${records} ${name}`), { code: records });
    if (!records) throw Object.assign(new Error(`queryTxt ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
    return records;
  },
};
const settings = { RATE_LIMIT_POINTS: 100_000 };
const first = await startTestServer(t, { settings, txtResolver: resolver });
const second = await startTestServer(t, { settings, databaseUrl: first.databaseUrl, txtResolver: resolver });
const server = first;

const team = await server.createTeam('Portal');
const T = `/v1/teams/${team.teamId}`;
const manager = await memberWithKey(server, team.teamId, 'manager', ['team.portal.manage']);
const member = await memberWithKey(server, team.teamId, 'member', []);
const portalRows = () => tableSnapshot(server, 'select * from portal_environment order by id', []);

t.test('setting up the portal: subdomain and name rules (400, nothing stored), defaults, one per team', async (t) => {
  expectError(t, await server.media('GET', `${T}/portal`, member.key), 404, 'error.notFound');
  const before = await portalRows();
  const bad: [Record<string, unknown>, string][] = [
    [{ subdomain: 'ab', name: 'Portal' }, 'subdomain'],
    [{ subdomain: 'a'.repeat(33), name: 'Portal' }, 'subdomain'],
    [{ subdomain: 'MyTeam', name: 'Portal' }, 'subdomain'],
    [{ subdomain: 'my-team', name: 'Portal' }, 'subdomain'],
    [{ subdomain: 'www', name: 'Portal' }, 'subdomain'],
    [{ subdomain: 'admin', name: 'Portal' }, 'subdomain'],
    [{ subdomain: 'myteam', name: 'ab' }, 'name'],
    [{ subdomain: 'myteam', name: 'n'.repeat(33) }, 'name'],
    [{ subdomain: 'myteam', name: 'Portal', logoURL: 'javascript:alert(1)' }, 'logoURL'],
    [{ subdomain: 'myteam', name: 'Portal', faviconURL: 'data:image/png;base64,AAAA' }, 'faviconURL'],
    [{ subdomain: 'myteam', name: 'Portal', language: 'english!' }, 'language'],
    [{ subdomain: 'myteam', name: 'Portal', customDomain: 'x.example.com' }, 'customDomain'],
  ];
  for (const [body, value] of bad) {
    const response = await server.media('POST', `${T}/portal`, manager.key, { body });
    expectError(t, response, 400, 'error.badRequest');
    t.equal(response.body.value, value, JSON.stringify(body));
  }
  expectError(t, await server.media('POST', `${T}/portal`, manager.key, { body: { name: 'Portal' } }), 400, 'error.missingArgument.subdomain');
  expectError(t, await server.media('POST', `${T}/portal`, member.key, { body: { subdomain: 'myteam', name: 'Portal' } }), 403, 'error.forbidden');
  t.equal(await portalRows(), before, 'nothing stored');

  const created = await server.media('POST', `${T}/portal`, manager.key, { body: { subdomain: 'myteam', name: ' My Team ', logoURL: 'https://cdn.example.com/logo.png' } });
  t.equal(created.status, 201);
  t.match(created.body, {
    teamId: team.teamId, subdomain: 'myteam', name: 'My Team', domainChangeCount: 0, lastDomainChange: null, customDomain: null,
    logoURL: 'https://cdn.example.com/logo.png', faviconURL: null, language: 'en', showApplyPanel: true, showTeamOverview: true, skipPortalPage: true,
  });
  t.same((await server.media('GET', `${T}/portal`, member.key)).body, created.body, 'every member reads it');
  expectError(t, await server.media('POST', `${T}/portal`, manager.key, { body: { subdomain: 'another', name: 'Again' } }), 409, 'error.portal.exists');

  const rival = await server.createTeam('Rival');
  const taken = await server.media('POST', `/v1/teams/${rival.teamId}/portal`, rival.key, { body: { subdomain: 'myteam', name: 'Rival' } });
  expectError(t, taken, 409, 'error.portal.subdomainTaken');
  expectError(t, await server.media('GET', `/v1/teams/${rival.teamId}/portal`, rival.key), 404, 'error.notFound');
});

t.test('changing the subdomain: counted, then refused (429) until the cool-down ends; other fields change freely', async (t) => {
  const rival = await server.createTeam('Rival2');
  const R = `/v1/teams/${rival.teamId}`;
  t.equal((await server.media('POST', `${R}/portal`, rival.key, { body: { subdomain: 'rivalteam', name: 'Rival' } })).status, 201);
  const before = await portalRows();
  expectError(t, await server.media('PATCH', `${R}/portal`, rival.key, { body: { subdomain: 'myteam' } }), 409, 'error.portal.subdomainTaken');
  expectError(t, await server.media('PATCH', `${R}/portal`, rival.key, { body: { subdomain: 'api' } }), 400, 'error.badRequest');
  expectError(t, await server.media('PATCH', `${R}/portal`, rival.key, { body: { showTeamOverview: 'yes' } }), 400, 'error.badRequest');
  t.equal(await portalRows(), before, 'a refused change changes nothing, nor counts');

  const changed = await server.media('PATCH', `${T}/portal`, manager.key, { body: { subdomain: 'ourteam', name: 'Our Team' } });
  t.equal(changed.status, 200);
  t.match(changed.body, { subdomain: 'ourteam', name: 'Our Team', domainChangeCount: 1 });
  t.ok(changed.body.lastDomainChange);
  const again = await server.media('PATCH', `${T}/portal`, manager.key, { body: { subdomain: 'thirdname' } });
  expectError(t, again, 429, 'error.portal.subdomainChangeCooldown');
  const retryAfter = Number(again.headers.get('retry-after'));
  t.ok(retryAfter > 6 * 24 * 3600 && retryAfter <= 7 * 24 * 3600, 'Retry-After: about 7 days');
  t.equal(again.body.value, new Date(Date.parse(changed.body.lastDomainChange) + 7 * 24 * 3600 * 1000).toISOString(), 'value: when it may change');
  const same = await server.media('PATCH', `${T}/portal`, manager.key, { body: { subdomain: 'ourteam', language: 'de', showApplyPanel: false, faviconURL: 'https://cdn.example.com/f.ico' } });
  t.equal(same.status, 200, 'naming the current subdomain is no change');
  t.match(same.body, { domainChangeCount: 1, language: 'de', showApplyPanel: false, faviconURL: 'https://cdn.example.com/f.ico' });
  t.equal((await server.media('POST', `/v1/teams/${(await server.createTeam('Third')).teamId}/portal`, manager.key, { body: { subdomain: 'myteam', name: 'Mine' } })).status, 401, 'a key of another team');
  const freed = await server.createTeam('Freed');
  t.equal((await server.media('POST', `/v1/teams/${freed.teamId}/portal`, freed.key, { body: { subdomain: 'myteam', name: 'Freed' } })).status, 201, 'the old subdomain is free again');
});

t.test('the custom domain: behind customPortalDomain (402), pending with a TXT record, verified to active, removed to deleted', async (t) => {
  expectError(t, await server.media('GET', `${T}/portal/domain`, manager.key), 404, 'error.notFound');
  const refused = await server.media('PUT', `${T}/portal/domain`, manager.key, { body: { domain: 'portal.example.com' } });
  expectError(t, refused, 402, 'error.teamLimits.customPortalDomain');
  await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { customPortalDomain: true });
  for (const domain of ['localhost', 'no_underscores.example.com', 'x.c', `${'a'.repeat(60)}.example.com`]) {
    expectError(t, await server.media('PUT', `${T}/portal/domain`, manager.key, { body: { domain } }), 400, 'error.badRequest');
  }
  expectError(t, await server.media('PUT', `${T}/portal/domain`, member.key, { body: { domain: 'portal.example.com' } }), 403, 'error.forbidden');
  expectError(t, await server.media('GET', `${T}/portal/domain`, manager.key), 404, 'error.notFound');

  const set = await server.media('PUT', `${T}/portal/domain`, manager.key, { body: { domain: 'Portal.Example.com' } });
  t.equal(set.status, 200);
  t.equal(set.body.portal.customDomain, 'portal.example.com');
  t.equal(set.body.verification.txtName, '_media-verify.portal.example.com');
  t.match(set.body.verification.txtValue, /^media-verify=[0-9a-f]{48}$/);
  const token = set.body.verification.txtValue;
  t.same((await server.media('GET', `${T}/portal/domain`, manager.key)).body, {
    domain: 'portal.example.com', status: 'pending', validation_records: { txt_name: '_media-verify.portal.example.com', txt_value: token }, verification_errors: [],
  });
  t.same((await server.media('PUT', `${T}/portal/domain`, manager.key, { body: { domain: 'portal.example.com' } })).body.verification.txtValue, token, 'the same domain again: the same token');

  const missing = await server.media('POST', `${T}/portal/domain/verify`, manager.key);
  t.match(missing.body, { status: 'pending', verification_errors: ['No TXT record found at _media-verify.portal.example.com'] });
  txtRecords.set('_media-verify.portal.example.com', [['v=spf1 -all'], ['media-verify=wrong']]);
  t.match((await server.media('POST', `${T}/portal/domain/verify`, manager.key)).body.verification_errors, [/do not hold the expected value/]);
  txtRecords.set('_media-verify.portal.example.com', 'ESERVFAIL');
  t.match((await server.media('POST', `${T}/portal/domain/verify`, manager.key)).body.verification_errors, [/failed \(ESERVFAIL\)/]);
  expectError(t, await second.admin('GET', `/v1/portals/portal.example.com`), 404, 'error.notFound');

  // A long record arrives as several character strings: they are joined.
  txtRecords.set('_media-verify.portal.example.com', [['unrelated'], [token.slice(0, 20), token.slice(20)]]);
  const verified = await second.media('POST', `${T}/portal/domain/verify`, manager.key);
  t.same(verified.body, { domain: 'portal.example.com', status: 'active', validation_records: null, verification_errors: [] });
  t.equal((await server.request('GET', '/v1/portals/portal.example.com')).body.subdomain, 'ourteam', 'the public portal answers under its domain');

  const rival = await server.createTeam('Squatter');
  await server.admin('PATCH', `/v1/admin/teams/${rival.teamId}/limits`, { customPortalDomain: true });
  await server.media('POST', `/v1/teams/${rival.teamId}/portal`, rival.key, { body: { subdomain: 'squatter', name: 'Squatter' } });
  expectError(t, await server.media('PUT', `/v1/teams/${rival.teamId}/portal/domain`, rival.key, { body: { domain: 'portal.example.com' } }), 409, 'error.portal.domainTaken');

  const removed = await server.media('DELETE', `${T}/portal/domain`, manager.key);
  t.same(removed.body, { domain: 'portal.example.com', status: 'deleted', validation_records: null, verification_errors: [] });
  t.equal((await server.media('GET', `${T}/portal`, manager.key)).body.customDomain, null);
  t.equal((await server.media('GET', `${T}/portal/domain`, manager.key)).body.status, 'deleted');
  expectError(t, await server.media('DELETE', `${T}/portal/domain`, manager.key), 404, 'error.notFound');
  expectError(t, await server.media('POST', `${T}/portal/domain/verify`, manager.key), 404, 'error.notFound');
  expectError(t, await server.request('GET', '/v1/portals/portal.example.com'), 404, 'error.notFound');
});

t.test('two teams waiting for one domain: the first verified holds it, the other stays pending with the reason', async (t) => {
  const [b, c] = [await server.createTeam('WaitB'), await server.createTeam('WaitC')];
  const tokens: string[] = [];
  for (const [owner, subdomain] of [[b, 'waitb'], [c, 'waitc']] as const) {
    await server.admin('PATCH', `/v1/admin/teams/${owner.teamId}/limits`, { customPortalDomain: true });
    await server.media('POST', `/v1/teams/${owner.teamId}/portal`, owner.key, { body: { subdomain, name: subdomain } });
    tokens.push((await server.media('PUT', `/v1/teams/${owner.teamId}/portal/domain`, owner.key, { body: { domain: 'shared.example.org' } })).body.verification.txtValue);
  }
  txtRecords.set('_media-verify.shared.example.org', tokens.map((token) => [token]));
  t.equal((await first.media('POST', `/v1/teams/${b.teamId}/portal/domain/verify`, b.key)).body.status, 'active');
  const loser = await second.media('POST', `/v1/teams/${c.teamId}/portal/domain/verify`, c.key);
  t.match(loser.body, { status: 'pending', verification_errors: ['The domain is active for another team\'s portal'] });

  await server.admin('PATCH', `/v1/admin/teams/${c.teamId}/limits`, { customPortalDomain: false });
  expectError(t, await server.media('POST', `/v1/teams/${c.teamId}/portal/domain/verify`, c.key), 402, 'error.teamLimits.customPortalDomain');
  t.equal((await server.media('DELETE', `/v1/teams/${c.teamId}/portal/domain`, c.key)).status, 200, 'removing needs no plan feature');
});

t.test('the public portal pages: settings and the team overview without a key', async (t) => {
  const portal = await server.request('GET', '/v1/portals/ourteam');
  t.equal(portal.status, 200);
  t.match(portal.body, { subdomain: 'ourteam', name: 'Our Team', customDomain: null, language: 'de', team: { id: team.teamId, name: 'Portal' } });
  t.ok(portal.headers.get('ratelimit-remaining'), 'limited per address');
  const group = (await server.admin('POST', `/v1/admin/teams/${team.teamId}/groups`, { name: 'Moderators', permissions: [], color: '#ff0000' })).body;
  t.equal((await server.media('PUT', `${T}/groups/${group.id}/members/${member.memberId}`, team.key)).status, 204);
  t.equal((await server.media('PATCH', `${T}/members/${member.memberId}`, team.key, { body: { sort: 1, mainGroupId: group.id } })).status, 200);
  t.equal((await server.media('PATCH', `${T}/members/${manager.memberId}`, team.key, { body: { sort: 2 } })).status, 200);
  const overview = await server.request('GET', '/v1/portals/OurTeam/team');
  t.equal(overview.status, 200);
  t.same(overview.body.map((entry: any) => entry.name), ['Owner', 'member', 'manager'], 'the current members, by sort');
  t.same(overview.body[1].mainGroup, { id: group.id, name: 'Moderators', color: '#ff0000', sort: 0 });
  t.same(overview.body.map((entry: any) => entry.isTeamOwner), [true, false, false], 'the owner is marked');
  t.same(Object.keys(overview.body[0]).sort(), ['createdAt', 'id', 'image', 'isTeamOwner', 'mainGroup', 'name', 'sort'], 'nothing more than spec 2.20 names');

  await server.media('PATCH', `${T}/portal`, manager.key, { body: { showTeamOverview: false } });
  expectError(t, await server.request('GET', '/v1/portals/ourteam/team'), 404, 'error.notFound');
  t.equal((await server.request('GET', '/v1/portals/ourteam')).status, 200, 'the portal itself stays public');
  expectError(t, await server.request('GET', '/v1/portals/nosuchportal'), 404, 'error.notFound');
  expectError(t, await server.request('GET', `/v1/portals/${'x'.repeat(70)}.example.com/team`), 404, 'error.notFound');
});

t.test('an archived team reads its portal and changes nothing', async (t) => {
  t.equal((await server.media('POST', `${T}/archive`, team.key)).status, 200);
  const before = await portalRows();
  for (const [method, path, body] of [
    ['PATCH', '/portal', { name: 'Archived' }], ['PUT', '/portal/domain', { domain: 'archived.example.com' }],
    ['POST', '/portal/domain/verify', undefined], ['DELETE', '/portal/domain', undefined],
  ] as const) {
    expectError(t, await server.media(method, `${T}${path}`, manager.key, body ? { body } : {}), 403, 'error.team.archived');
  }
  t.equal((await server.media('GET', `${T}/portal`, manager.key)).status, 200);
  t.equal(await portalRows(), before);
  t.equal((await server.media('POST', `${T}/unarchive`, team.key)).status, 200);
});

t.test('two instances: one subdomain claimed at once by two teams, or changed at once twice, is decided once', async (t) => {
  for (let round = 0; round < 3; round++) {
    const pair = [await server.createTeam(`Race${round}a`), await server.createTeam(`Race${round}b`)];
    const answers = await Promise.all(pair.map((owner, i) =>
      (i ? second : first).media('POST', `/v1/teams/${owner.teamId}/portal`, owner.key, { body: { subdomain: `contested${round}`, name: 'Contested' } })));
    t.same(answers.map((answer) => answer.status).sort(), [201, 409], `round ${round}`);
    t.equal(answers.find((answer) => answer.status === 409)!.body.messageKey, 'error.portal.subdomainTaken');
  }
  const owner = await server.createTeam('Changer');
  await server.media('POST', `/v1/teams/${owner.teamId}/portal`, owner.key, { body: { subdomain: 'changer', name: 'Changer' } });
  const changes = await Promise.all([first, second].map((instance, i) =>
    instance.media('PATCH', `/v1/teams/${owner.teamId}/portal`, owner.key, { body: { subdomain: `changed${i}` } })));
  t.same(changes.map((answer) => answer.status).sort(), [200, 429], 'the second change meets the first one\'s cool-down');
  t.equal((await server.media('GET', `/v1/teams/${owner.teamId}/portal`, owner.key)).body.domainChangeCount, 1);
});
