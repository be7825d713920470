import { createHash, randomInt, randomUUID } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { ServiceError } from '../../errors/service-error.ts';
import { notFound } from '../../errors/errors.ts';
import type { IssuedSession, SessionOrigin, SessionService } from '../sessions/session.service.ts';
import { parseInput } from '../validation.ts';

/** A code lives this long: enough to switch to a browser, sign in and approve. */
export const LAUNCHER_CODE_TTL_SECONDS = 600;
/** No 0/O, 1/I/L, 2/Z, 5/S, 8/B: a code read aloud or typed from a screen comes out right. */
const ALPHABET = 'ACDEFGHJKMNPQRTUVWXY34679';
const CODE_PATTERN = /^[A-Z0-9]{4}-[A-Z0-9]{4}$/;

export const startCodeSchema = z.strictObject({
  codeChallenge: z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'must be the base64url SHA-256 of the code verifier (43 characters)')
    .meta({ description: 'BASE64URL(SHA-256(codeVerifier)), as PKCE S256 (RFC 7636).' }),
  codeChallengeMethod: z.literal('S256').optional().meta({ description: 'Only S256.' }),
  clientName: z.string().min(1).max(64).optional().meta({ description: 'Shown to the person approving, e.g. "Launcher 2.3 on PC-7".' }),
});

export const exchangeCodeSchema = z.strictObject({
  code: z.string().meta({ description: 'The identifier of the code.' }),
  codeVerifier: z.string().regex(/^[A-Za-z0-9._~-]{43,128}$/, 'must be 43-128 characters of A-Z a-z 0-9 - . _ ~ (RFC 7636)'),
});

interface CodeRow {
  id: string;
  identifier: string;
  user_id: string | null;
  code_challenge: string | null;
  client_name: string | null;
  expires: Date;
  approved_at: Date | null;
  used_at: Date | null;
  created_at: Date;
}

function codeView(row: CodeRow) {
  return {
    id: row.id,
    identifier: row.identifier,
    userId: row.user_id,
    expires: new Date(row.expires).toISOString(),
    createdAt: new Date(row.created_at).toISOString(),
    codeChallenge: row.code_challenge,
    clientName: row.client_name,
    approved: row.approved_at !== null,
    // Approved when it was made (started with a session): nobody needs to approve it.
    skipAuth: row.approved_at !== null && new Date(row.approved_at).getTime() === new Date(row.created_at).getTime(),
  };
}

export type LauncherCodeView = ReturnType<typeof codeView>;

function launcherError(status: number, key: string, message: string): ServiceError {
  const names: Record<number, string> = { 400: 'BadRequestError', 409: 'ConflictError', 410: 'GoneError' };
  return new ServiceError({ name: names[status] ?? 'ServiceError', status, messageKey: `error.launcher.${key}`, message });
}

function challengeOf(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url');
}

function newIdentifier(): string {
  const pick = () => Array.from({ length: 4 }, () => ALPHABET[randomInt(ALPHABET.length)]).join('');
  return `${pick()}-${pick()}`;
}

/**
 * Launcher sign-in (spec 2.10): a launcher or game server starts a code with a PKCE challenge,
 * a signed-in person approves it, and the launcher exchanges the code and its verifier for a
 * session of that person. The code alone is worth nothing: without the verifier, which never
 * leaves the launcher, it cannot be exchanged. A code is exchanged once, within its lifetime.
 */
export class LauncherCodeService {
  private readonly orm: MikroORM;
  private readonly sessions: SessionService;

  constructor(options: { orm: MikroORM; sessions: SessionService }) {
    this.orm = options.orm;
    this.sessions = options.sessions;
  }

  /** A new code; started by a signed-in caller (`approvedBy`), it is approved at once (skipAuth). */
  async start(input: unknown, approvedBy: string | null): Promise<LauncherCodeView> {
    const { codeChallenge, clientName } = parseInput(startCodeSchema, input);
    const connection = this.orm.em.getConnection();
    for (;;) {
      const rows = await connection.execute<CodeRow[]>(
        `insert into auth_session_code (id, identifier, user_id, code_challenge, client_name, expires, approved_at, created_at)
         values (?, ?, ?, ?, ?, now() + make_interval(secs => ?), case when ?::uuid is null then null else now() end, now())
         on conflict (identifier) do nothing returning *`,
        [randomUUID(), newIdentifier(), approvedBy, codeChallenge, clientName ?? null, LAUNCHER_CODE_TTL_SECONDS, approvedBy],
      );
      if (rows[0]) return codeView(rows[0]);
    }
  }

  /** The code as the person about to approve it sees it (404 once expired or used). */
  async describe(identifier: string): Promise<LauncherCodeView> {
    const [row] = await this.orm.em.getConnection().execute<CodeRow[]>(
      `select * from auth_session_code where identifier = ? and expires > now() and used_at is null`, [normalise(identifier)],
    );
    if (!row) throw notFound('launcher code', identifier);
    return codeView(row);
  }

  /** The signed-in user approves a code: the launcher holding its verifier may now sign in as that user. */
  async approve(identifier: string, userId: string): Promise<LauncherCodeView> {
    const [row] = await this.orm.em.getConnection().execute<CodeRow[]>(
      `update auth_session_code set user_id = ?, approved_at = now()
        where identifier = ? and expires > now() and used_at is null and approved_at is null returning *`,
      [userId, normalise(identifier)],
    );
    if (row) return codeView(row);
    const existing = await this.describe(identifier);
    throw launcherError(409, 'alreadyApproved', existing.userId === userId ? 'The code is already approved' : 'The code was approved by someone else');
  }

  /**
   * The launcher's exchange: the code's challenge must be the SHA-256 of the verifier, the code
   * approved, live and unused. The code is marked used in the same statement that checks it, so of
   * two racing exchanges one gets a session.
   */
  async exchange(input: unknown, origin: SessionOrigin): Promise<IssuedSession> {
    const { code, codeVerifier } = parseInput(exchangeCodeSchema, input);
    if (!CODE_PATTERN.test(normalise(code))) throw launcherError(400, 'invalidCode', 'Unknown, expired or used code');
    return this.orm.em.fork().transactional(async (em) => {
      const [row] = await em.execute<CodeRow[]>(`select * from auth_session_code where identifier = ? for update`, [normalise(code)]);
      if (!row || row.used_at !== null || new Date(row.expires).getTime() <= Date.now()) throw launcherError(400, 'invalidCode', 'Unknown, expired or used code');
      if (row.code_challenge !== challengeOf(codeVerifier)) throw launcherError(400, 'invalidVerifier', 'The code verifier does not match the code\'s challenge');
      if (row.approved_at === null || row.user_id === null) throw launcherError(409, 'pending', 'Nobody has approved the code yet; ask again in a few seconds');
      await em.execute(`update auth_session_code set used_at = now() where id = ?`, [row.id]);
      return this.sessions.issue(row.user_id, origin, em);
    });
  }
}

function normalise(identifier: string): string {
  return identifier.trim().toUpperCase();
}
