import { connectPg } from './database.ts';
import type { TestServer } from './server.ts';

/** A member with exactly `permissions` (and the given groups) and a key linked to it, made through the operator routes. */
export async function memberWithKey(
  server: TestServer,
  teamId: string,
  name: string,
  permissions: string[],
  options: { groupIds?: string[]; scopes?: string[] } = {},
): Promise<{ memberId: string; key: string; keyId: string }> {
  const member = await server.admin('POST', `/v1/admin/teams/${teamId}/members`, { name, permissions, ...(options.groupIds && { groupIds: options.groupIds }) });
  if (member.status !== 201) throw new Error(`member creation failed: ${JSON.stringify(member.body)}`);
  const key = await server.admin('POST', `/v1/admin/teams/${teamId}/api-keys`, { teamMemberId: member.body.id, ...(options.scopes && { scopes: options.scopes }) });
  if (key.status !== 201) throw new Error(`key creation failed: ${JSON.stringify(key.body)}`);
  return { memberId: member.body.id, key: key.body.key, keyId: key.body.id };
}

/** Rows of the team log of a team, oldest first, straight from the database. */
export async function teamLogRows(server: TestServer, teamId: string): Promise<{ action: string; team_member_id: string | null; target_team_member_id: string | null; target_identifier: string | null; data: any }[]> {
  const client = await connectPg(server.databaseUrl);
  try {
    const { rows } = await client.query(
      'select action, team_member_id, target_team_member_id, target_identifier, data from team_log where team_id = $1 order by created_at, id',
      [teamId],
    );
    return rows;
  } finally {
    await client.end();
  }
}

/** The same row set as a snapshot string, for "nothing changed" checks. */
export async function tableSnapshot(server: TestServer, sql: string, params: unknown[]): Promise<string> {
  const client = await connectPg(server.databaseUrl);
  try {
    return JSON.stringify((await client.query(sql, params)).rows);
  } finally {
    await client.end();
  }
}
