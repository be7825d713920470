import type { EntityManager } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import { hashToken, newToken, type TokenRow, type TokenType } from './verification-token.ts';

interface RawRow {
  id: string;
  type: string;
  user_id: string;
  data: Record<string, unknown> | null;
  action_id: string;
  expires_at: Date | string;
  used_at: Date | string | null;
  locked: boolean;
  created_at: Date | string;
}

const COLUMNS = 'id, type, user_id, data, action_id, expires_at, used_at, locked, created_at';

const toRow = (raw: RawRow): TokenRow => ({
  id: raw.id, type: raw.type as TokenType, userId: raw.user_id, data: raw.data, actionId: raw.action_id,
  // Raw queries answer timestamps as text.
  expiresAt: new Date(raw.expires_at), usedAt: raw.used_at === null ? null : new Date(raw.used_at), locked: raw.locked, createdAt: new Date(raw.created_at),
});

export interface NewToken {
  type: TokenType;
  userId: string;
  data: Record<string, unknown> | null;
}

/** Rows of `verification_action_token`, always inside the caller's transaction (`em`). */
export const verificationTokens = {
  /** Creates one token per entry, all of one action (one action id), expiring together; answers each with its secret. */
  async createAction(em: EntityManager, tokens: NewToken[], ttlMs: number): Promise<{ actionId: string; created: { row: TokenRow; token: string }[] }> {
    const actionId = randomUUID();
    const created: { row: TokenRow; token: string }[] = [];
    for (const entry of tokens) {
      const token = newToken();
      const rows = await em.execute<RawRow[]>(
        `insert into verification_action_token (id, type, user_id, token_hash, data, action_id, expires_at, created_at)
         values (?, ?, ?, ?, ?, ?, now() + ? * interval '1 millisecond', now()) returning ${COLUMNS}`,
        [randomUUID(), entry.type, entry.userId, hashToken(token), entry.data === null ? null : JSON.stringify(entry.data), actionId, ttlMs],
      );
      created.push({ row: toRow(rows[0]!), token });
    }
    return { actionId, created };
  },

  async findByToken(em: EntityManager, token: string): Promise<TokenRow | null> {
    const rows = await em.execute<RawRow[]>(`select ${COLUMNS} from verification_action_token where token_hash = ?`, [hashToken(token)]);
    return rows[0] ? toRow(rows[0]) : null;
  },

  /** Every token of the action, locked for the rest of the transaction (confirms of one action run one after another). */
  async lockAction(em: EntityManager, actionId: string): Promise<TokenRow[]> {
    const rows = await em.execute<RawRow[]>(`select ${COLUMNS} from verification_action_token where action_id = ? order by id for update`, [actionId]);
    return rows.map(toRow);
  },

  async markUsed(em: EntityManager, id: string): Promise<void> {
    await em.execute(`update verification_action_token set used_at = now() where id = ?`, [id]);
  },

  /** The action ran: its tokens can never be used again, and progress shows it done. */
  async lockAll(em: EntityManager, actionId: string): Promise<void> {
    await em.execute(`update verification_action_token set locked = true where action_id = ?`, [actionId]);
  },

  /**
   * Removes the unfinished actions a new one replaces (a new request supersedes the old one's
   * links): tokens of `type` of the user's not yet run, optionally only those of one team.
   */
  async dropUnfinished(em: EntityManager, type: TokenType, userId: string, teamId?: string): Promise<void> {
    await em.execute(
      `delete from verification_action_token where action_id in (
         select action_id from verification_action_token
          where type = ? and user_id = ? and not locked ${teamId ? `and data->>'teamId' = ?` : ''})`,
      teamId ? [type, userId, teamId] : [type, userId],
    );
  },

  /** When the user last started an action of `type` (for throttling re-sends). */
  async lastCreated(em: EntityManager, type: TokenType, userId: string): Promise<Date | null> {
    const rows = await em.execute<{ at: Date | null }[]>(`select max(created_at) as at from verification_action_token where type = ? and user_id = ?`, [type, userId]);
    return rows[0]?.at ?? null;
  },

  /** The user's tokens shown as progress: every type but `hidden`, not expired, newest first. */
  async progressOf(em: EntityManager, userId: string, hidden: TokenType): Promise<TokenRow[]> {
    const rows = await em.execute<RawRow[]>(
      `select ${COLUMNS} from verification_action_token where user_id = ? and type <> ? and expires_at > now() order by created_at desc, id`,
      [userId, hidden],
    );
    return rows.map(toRow);
  },
};
