import { join as joinPath } from 'node:path';
import { pathToFileURL } from 'node:url';
import t, { type Test } from 'tap';
import type { Page } from 'playwright-core';
import { allPermissions } from '../../src/auth/permissions.ts';
import { launchChromiumOrSkip } from '../helpers/browser.ts';
import { bearer, join, PASSWORD, signUp } from '../helpers/accounts.ts';
import { expectAccessible, SCREENSHOT_DIRECTORY, screenshot, signInWithKey, newDashboardPage, clipboardText } from '../helpers/dashboard.ts';
import { expectError, startTestServer } from '../helpers/server.ts';

// The dashboard's team screens in a real Chromium against the real service: signing in with a
// key alone, API keys (the secret shown once), invites and the join page of their links, members
// and groups, and what a member with fewer permissions sees. Screenshots go to SCREENSHOT_DIRECTORY.

const browser = await launchChromiumOrSkip(t, 'dashboard team screens browser test');
const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 100_000 } });
const team = await server.createTeam('Echo');
const base = `/v1/teams/${team.teamId}`;
t.comment(`screenshots: ${SCREENSHOT_DIRECTORY}`);

const newPage = (t: Test) => newDashboardPage(t, browser, server.baseUrl);


async function openView(page: Page, label: string) {
  await page.getByRole('link', { name: label, exact: true }).click();
  await page.getByRole('heading', { level: 1, name: label }).waitFor();
}

/** Axe and a screenshot, wide and narrow. */
async function checkScreen(t: Test, page: Page, name: string) {
  await expectAccessible(t, page, name);
  await screenshot(page, name);
  await page.setViewportSize({ width: 390, height: 844 });
  await expectAccessible(t, page, `${name}, narrow`);
  await screenshot(page, `${name}-narrow`);
  await page.setViewportSize({ width: 1280, height: 860 });
}

t.test('the dashboard\'s permission list is the service\'s', async (t) => {
  const module = await import(pathToFileURL(joinPath(import.meta.dirname, '../../web/dashboard/permission-names.js')).href);
  t.same([...module.PERMISSION_NAMES].sort(), [...allPermissions].sort());
});

t.test('key sign-in: the key alone opens its team; an upload-only key and a wrong key are refused in words', async (t) => {
  const uploadOnly = await server.admin('POST', `/v1/admin/teams/${team.teamId}/api-keys`, { scopes: ['media:upload'] });
  const { page, pageErrors } = await newPage(t);
  await page.goto(`${server.baseUrl}/app`);
  t.equal(await page.getByLabel('Team id').count(), 0, 'no team id to paste');
  await page.getByLabel('API key', { exact: true }).fill(uploadOnly.body.key);
  await page.getByRole('button', { name: 'Open the team' }).click();
  await page.getByRole('alert').filter({ hasText: 'can only upload files' }).waitFor();
  await page.getByLabel('API key', { exact: true }).fill(`tws_0123456789abcdef_${'A'.repeat(43)}`);
  await page.getByRole('button', { name: 'Open the team' }).click();
  await page.getByRole('alert').filter({ hasText: 'check what you typed' }).waitFor();
  await expectAccessible(t, page, 'key sign-in');
  await screenshot(page, '20-sign-in-key-only');
  await signInWithKey(page, server.baseUrl, { key: team.key });
  t.match(await page.locator('.team-name').textContent(), /^Echo/, 'the key\'s team is open');
  for (const label of ['Members', 'Invites', 'API keys']) t.ok(await page.getByRole('link', { name: label, exact: true }).isVisible(), `${label} in the navigation`);
  t.same(pageErrors, []);
});

t.test('API keys: create (the secret shown once, copied), reroll, delete', async (t) => {
  const builder = await server.admin('POST', `/v1/admin/teams/${team.teamId}/members`, { name: 'builder', permissions: ['team.media.view', 'team.media.upload'] });
  const { page, pageErrors } = await newPage(t);
  await signInWithKey(page, server.baseUrl, team);
  await openView(page, 'API keys');
  await page.getByLabel('Description', { exact: true }).fill('eu-1 server');
  await page.getByLabel('Acts as', { exact: true }).selectOption({ label: 'builder' });
  await page.getByLabel('Scope', { exact: true }).selectOption('upload');
  await page.getByRole('button', { name: 'Create key' }).click();
  await page.getByRole('heading', { name: 'Secret of eu-1 server' }).waitFor();
  t.match(await page.getByText('you will not see it again').textContent(), /Copy it now/);
  const secret = await page.getByLabel('Secret key', { exact: true }).inputValue();
  t.match(secret, /^tws_[0-9a-f]{16}_/);
  await page.getByRole('button', { name: 'Copy key' }).click();
  await page.getByText('Key copied').waitFor();
  t.equal(await clipboardText(page), secret, 'the secret is on the clipboard');
  const created = await server.media('GET', '/v1/auth/key', secret);
  t.match(created.body, { description: 'eu-1 server', teamMemberId: builder.body.id, scopes: ['media:upload'] }, 'the key made as chosen');
  await page.locator('.team-row', { hasText: 'eu-1 server' }).waitFor();
  await checkScreen(t, page, '21-api-keys-secret');
  await page.getByRole('button', { name: 'I have copied it' }).click();
  t.equal(await page.getByLabel('Secret key').count(), 0);
  t.notOk((await page.content()).includes(secret), 'the secret is gone from the page');
  t.match(await page.locator('.team-row', { hasText: 'eu-1 server' }).textContent(), /Acts as builder · uploads only/);

  await page.getByRole('button', { name: 'Reroll eu-1 server…' }).click();
  await page.getByRole('button', { name: 'Reroll key', exact: true }).click();
  await page.getByRole('heading', { name: 'New secret of eu-1 server' }).waitFor();
  const rerolled = await page.getByLabel('Secret key', { exact: true }).inputValue();
  t.not(rerolled, secret);
  expectError(t, await server.media('GET', '/v1/auth/key', secret), 401, 'error.unauthorized');
  t.equal((await server.media('GET', '/v1/auth/key', rerolled)).status, 200, 'the new secret works');
  await page.getByRole('button', { name: 'I have copied it' }).click();
  await checkScreen(t, page, '22-api-keys');

  await page.getByRole('button', { name: 'Delete eu-1 server…' }).click();
  await page.getByRole('button', { name: 'Delete key', exact: true }).click();
  await page.getByText('Key deleted').waitFor();
  await page.locator('.team-row', { hasText: 'eu-1 server' }).waitFor({ state: 'detached' });
  expectError(t, await server.media('GET', '/v1/auth/key', rerolled), 401, 'error.unauthorized');
  t.same(pageErrors, []);
});

t.test('invites: create, copy the link, revoke; a link opens the join page, where a user joins', async (t) => {
  const group = (await server.admin('POST', `/v1/admin/teams/${team.teamId}/groups`, { name: 'Testers', permissions: ['team.media.view'] })).body;
  const { page, pageErrors } = await newPage(t);
  await signInWithKey(page, server.baseUrl, team);
  await openView(page, 'Invites');
  await page.getByLabel('Group the new member joins', { exact: true }).selectOption({ label: 'Testers' });
  await page.getByLabel('Valid for (days, 1 to 365)', { exact: true }).fill('3');
  await page.getByRole('button', { name: 'Create invite' }).click();
  await page.getByText('Invite into Testers created').waitFor();
  const [invite] = (await server.media('GET', `${base}/invites`, team.key)).body;
  t.match(invite, { groupId: group.id, isMultiUse: false, isUsed: false });
  const days = (new Date(invite.expireDate).getTime() - Date.now()) / 86_400_000;
  t.ok(days > 2.9 && days <= 3, 'valid for the days chosen');
  await page.getByRole('button', { name: 'Copy link' }).click();
  await page.getByText('Invite link copied').waitFor();
  const link = await clipboardText(page);
  t.equal(link, `${server.baseUrl}/app/invite/${invite.id}`);
  await checkScreen(t, page, '23-invites');

  await page.getByRole('button', { name: 'Revoke…' }).click();
  await page.getByRole('button', { name: 'Revoke invite', exact: true }).click();
  await page.getByText('No pending invite.').waitFor();
  t.same((await server.media('GET', `${base}/invites`, team.key)).body, [], 'revoked on the service');

  // A second invite, opened by a signed-out user: sign in, then join.
  await page.getByRole('button', { name: 'Create invite' }).click();
  await page.getByText('Invite into Testers created').waitFor();
  await page.getByRole('button', { name: 'Copy link' }).click();
  await page.getByText('Invite link copied').waitFor();
  const second = await clipboardText(page);
  const user = await signUp(server);
  const joiner = await newPage(t);
  await joiner.page.goto(link);
  await joiner.page.getByText('Sign in with your account to accept the invite.').waitFor();
  await joiner.page.getByLabel('Email or username', { exact: true }).fill(user.username);
  await joiner.page.getByLabel('Password', { exact: true }).fill(PASSWORD);
  await joiner.page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await joiner.page.getByRole('alert').filter({ hasText: 'does not exist any more' }).waitFor();
  t.pass('the revoked invite\'s link says so');
  await joiner.page.goto(second);
  await joiner.page.getByRole('heading', { level: 1, name: 'Join a team' }).waitFor();
  await joiner.page.getByText('You are invited into Echo').waitFor();
  await expectAccessible(t, joiner.page, 'join page');
  await screenshot(joiner.page, '24-join');
  await joiner.page.getByLabel(/Your name in the team/).fill('newcomer');
  await joiner.page.getByRole('button', { name: 'Join Echo' }).click();
  await joiner.page.getByRole('heading', { level: 1, name: 'Media' }).waitFor();
  const members = (await server.media('GET', `${base}/members`, team.key)).body.data;
  t.match(members.find((member: { name: string }) => member.name === 'newcomer'), { userId: user.userId, mainGroupId: group.id }, 'joined into the invite\'s group');
  t.same(pageErrors, []);
  t.same(joiner.pageErrors, []);
});

t.test('members and groups: create a group with permissions, add a member, rename, change a member, remove it', async (t) => {
  const ranger = (await server.admin('POST', `/v1/admin/teams/${team.teamId}/members`, { name: 'ranger', permissions: [] })).body;
  const markup = '<img src=x onerror=f()>';
  t.equal((await server.media('POST', `${base}/groups`, team.key, { body: { name: markup, permissions: [] } })).status, 201);
  const { page, dialogs, pageErrors } = await newPage(t);
  await signInWithKey(page, server.baseUrl, team);
  await openView(page, 'Members');
  await page.locator('.team-row-name', { hasText: 'ranger' }).waitFor();
  t.equal(await page.locator('.team-row-name', { hasText: markup }).count(), 1, 'a group name with markup is shown as text');

  await page.getByLabel('Name of the new group', { exact: true }).fill('Moderators');
  await page.locator('#new-group-team-media-view').check();
  await page.locator('#new-group-team-media-edit').check();
  await page.getByRole('button', { name: 'Create group' }).click();
  await page.getByText('Group Moderators created').waitFor();
  const moderators = (await server.media('GET', `${base}/groups`, team.key)).body.find((group: { name: string }) => group.name === 'Moderators');
  t.same(moderators.permissions.sort(), ['team.media.edit', 'team.media.view'], 'created with its permissions');

  await page.getByRole('button', { name: 'Edit Moderators' }).click();
  await page.getByLabel('Add a member to Moderators', { exact: true }).selectOption({ label: 'ranger' });
  await page.getByRole('button', { name: 'Add member' }).click();
  await page.getByText('ranger added to Moderators').waitFor();
  const info = (await server.media('GET', `${base}/members/${ranger.id}`, team.key)).body;
  t.same(info.groups.map((group: { name: string }) => group.name), ['Moderators'], 'the member is in the group');
  await checkScreen(t, page, '25-members-group');

  await page.getByLabel('Name of the group', { exact: true }).fill('Mods');
  await page.locator(`#group-${moderators.id}-perm-team-media-edit`).uncheck();
  await page.getByRole('button', { name: 'Save group' }).click();
  await page.getByText('Group saved').waitFor();
  t.match((await server.media('GET', `${base}/groups`, team.key)).body.find((group: { id: string }) => group.id === moderators.id), { name: 'Mods', permissions: ['team.media.view'] });

  await page.getByRole('button', { name: 'Open ranger' }).click();
  await page.getByText('Effective permissions').waitFor();
  t.match(await page.locator('.member-editor .facts').textContent(), /GroupsModsMain groupnoneEffective permissionsteam\.media\.view/, 'its groups and effective permissions');
  await page.locator(`#member-${ranger.id}-own-team-logs-view`).check();
  await page.getByRole('button', { name: 'Save permissions' }).click();
  await page.getByText('Permissions saved').waitFor();
  await page.getByLabel('Main group of ranger', { exact: true }).selectOption({ label: 'Mods' });
  await page.getByText('Main group saved').waitFor();
  t.match((await server.media('GET', `${base}/members/${ranger.id}`, team.key)).body, { permissions: ['team.logs.view'], mainGroupId: moderators.id });
  t.match(await page.locator('.member-editor .facts').textContent(), /Effective permissionsteam\.logs\.view, team\.media\.view/);
  await checkScreen(t, page, '26-member');

  await page.getByRole('button', { name: 'Remove ranger from the team…' }).click();
  await page.getByRole('button', { name: 'Remove member', exact: true }).click();
  await page.getByText('ranger removed').waitFor();
  await page.locator('.team-row-name', { hasText: 'ranger' }).waitFor({ state: 'detached' });
  t.ok((await server.media('GET', `${base}/members/${ranger.id}`, team.key)).body.leftTeamAt, 'removed on the service');

  await page.getByRole('button', { name: 'Delete Mods…' }).click();
  await page.getByRole('button', { name: 'Delete group', exact: true }).click();
  await page.getByText('Mods deleted').waitFor();
  t.notOk((await server.media('GET', `${base}/groups`, team.key)).body.some((group: { id: string }) => group.id === moderators.id), 'deleted');
  t.equal(await page.locator('img[src="x"]').count(), 0, 'no element made from a name');
  t.same(dialogs, []);
  t.same(pageErrors, []);
});

t.test('a member who may only view members: fewer screens, no controls, and the API refuses the rest', async (t) => {
  const user = await signUp(server);
  await join(server, team, user.userId, ['team.media.view', 'team.members.view']);
  const { page, pageErrors } = await newPage(t);
  await page.goto(`${server.baseUrl}/app`);
  await page.getByLabel('Email or username', { exact: true }).fill(user.username);
  await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  // In one team only: it opens at once.
  await page.getByRole('heading', { level: 1, name: 'Media' }).waitFor();
  await page.getByRole('link', { name: 'Members', exact: true }).waitFor();
  t.pass('Members is shown (the navigation is drawn at once, every entry)');
  t.equal(await page.getByRole('link', { name: 'Invites', exact: true }).count(), 0, 'no Invites');
  t.equal(await page.getByRole('link', { name: 'API keys', exact: true }).count(), 0, 'no API keys');

  await openView(page, 'Members');
  await page.locator('.team-row-name', { hasText: 'newcomer' }).waitFor();
  t.equal(await page.getByRole('heading', { name: 'Create a group' }).count(), 0, 'no group creation');
  t.equal(await page.getByRole('button', { name: /^Edit / }).count(), 0, 'no group editing');
  await page.getByRole('button', { name: 'Open newcomer' }).click();
  await page.getByText('Effective permissions').waitFor();
  t.equal(await page.getByRole('button', { name: /Save|Remove/ }).count(), 0, 'no member changes');
  await checkScreen(t, page, '27-members-view-only');

  await page.goto(`${server.baseUrl}/app/api-keys`);
  await page.getByRole('heading', { level: 1, name: 'Media' }).waitFor();
  t.equal(new URL(page.url()).pathname, '/app/media', 'the address of a view not allowed leads to Media');
  const refused = await server.request('POST', `${base}/groups`, { headers: bearer(user.token), body: { name: 'Sneaky', permissions: [] } });
  expectError(t, refused, 403, 'error.forbidden');
  t.equal(refused.body.value, 'team.groups.manage');
  expectError(t, await server.request('GET', `${base}/api-keys`, { headers: bearer(user.token) }), 403, 'error.forbidden');
  t.same(pageErrors, []);
});
