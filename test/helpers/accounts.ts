import { connectPg } from './database.ts';
import type { ApiResponse, TestServer } from './server.ts';

export const PASSWORD = 'correct horse battery';
let counter = 0;

export interface SignedUp {
  email: string;
  username: string;
  password: string;
  token: string;
  userId: string;
}

/** A new user through POST /v1/auth/sign-up, signed in. */
export async function signUp(server: TestServer, overrides: { email?: string; username?: string } = {}): Promise<SignedUp> {
  const n = `${process.pid % 1000}_${++counter}`;
  const body = { email: `person${n}@example.test`, username: `person_${n}`, password: PASSWORD, ...overrides };
  const response = await server.request('POST', '/v1/auth/sign-up', { body });
  if (response.status !== 201) throw new Error(`sign-up failed: ${JSON.stringify(response.body)}`);
  return { ...body, token: response.body.token, userId: response.body.user.id };
}

/** Runs one query against the server's database. */
export async function sql<T = any>(server: TestServer, text: string, params: unknown[] = []): Promise<T[]> {
  const client = await connectPg(server.databaseUrl);
  try {
    return (await client.query(text, params)).rows;
  } finally {
    await client.end();
  }
}

/** Row counts of what a sign-in may create; equal before and after a refusal means nothing was left behind. */
export async function accountRows(server: TestServer): Promise<{ users: number; accounts: number; sessions: number; states: number }> {
  const [row] = await sql(server, `select (select count(*)::int from "user") as users, (select count(*)::int from account) as accounts,
    (select count(*)::int from user_session) as sessions, (select count(*)::int from oauth_state) as states`);
  return row;
}

/** The callback request the browser makes when the provider sends it back (`back`: where it was sent). */
export function callback(server: TestServer, back: URL): Promise<ApiResponse> {
  return server.request('GET', `${back.pathname}${back.search}`);
}

export function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}
/** The token (`tvt_...`) of the newest outbox message to `recipient` of `kind`. */
export async function outboxToken(server: TestServer, recipient: string, kind: string): Promise<string> {
  const rows = await sql(server, 'select body from mail_outbox where recipient = $1 and kind = $2 order by created_at desc limit 1', [recipient, kind]);
  const token = /tvt_[A-Za-z0-9_-]{43}/.exec(rows[0]?.body ?? '')?.[0];
  if (!token) throw new Error(`no ${kind} mail to ${recipient}`);
  return token;
}

/** Joins `userId` into the team through an invite (a group with `permissions`); answers its member id. */
export async function join(server: TestServer, team: { teamId: string; key: string }, userId: string, permissions: string[] = []): Promise<string> {
  const group = await server.admin('POST', `/v1/admin/teams/${team.teamId}/groups`, { name: `Crew${++counter}`, permissions });
  const invite = await server.media('POST', `/v1/teams/${team.teamId}/invites`, team.key, { body: { groupId: group.body.id } });
  const joined = await server.admin('POST', `/v1/admin/invites/${invite.body.id}/accept`, { userId });
  if (joined.status !== 201) throw new Error(`join failed: ${JSON.stringify(joined.body)}`);
  return joined.body.id;
}

/** A team whose owner is `owner` (the operator's placeholder owner hands the flag over), plus its first key. */
export async function teamOwnedBy(server: TestServer, owner: SignedUp, name = `Team${++counter}`) {
  const team = await server.createTeam(name);
  const ownerMemberId = await join(server, team, owner.userId);
  await sql(server, 'update team_member set is_team_owner = (id = $1) where team_id = $2 and (is_team_owner or id = $1)', [ownerMemberId, team.teamId]);
  return { ...team, ownerMemberId };
}

export const confirm = (server: TestServer, token: string) => server.request('POST', '/v1/auth/verification-tokens/confirm', { body: { token } });
