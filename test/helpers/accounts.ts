import { connectPg } from './database.ts';
import type { ApiResponse, TestServer } from './server.ts';

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

let counter = 0;

/** A new user through email-and-password sign-up, with its session token. */
export async function signUp(server: TestServer, overrides: { email?: string; username?: string } = {}) {
  const n = `${process.pid}_${++counter}`;
  const body = { email: `person${n}@example.com`, username: `p_${n}`.slice(0, 20), password: 'correct horse battery', ...overrides };
  const response = await server.request('POST', '/v1/auth/sign-up', { body });
  if (response.status !== 201) throw new Error(`sign-up failed: ${JSON.stringify(response.body)}`);
  return { ...body, token: response.body.token as string, userId: response.body.user.id as string };
}

/** The callback request the browser makes when the provider sends it back (`back`: where it was sent). */
export function callback(server: TestServer, back: URL): Promise<ApiResponse> {
  return server.request('GET', `${back.pathname}${back.search}`);
}

export function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}
