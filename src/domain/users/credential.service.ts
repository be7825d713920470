import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { z } from 'zod';
import type { FailureThrottle } from '../../auth/failure-throttle.ts';
import type { PasswordHasher } from '../../auth/password-hash.ts';
import { forbidden, signUpClosed, unauthorized, userTaken } from '../../errors/errors.ts';
import { Account, CREDENTIAL_PROVIDER } from '../accounts/account.entity.ts';
import type { IssuedSession, SessionOrigin, SessionService } from '../sessions/session.service.ts';
import { parseInput } from '../validation.ts';
import { email, password, username } from './user-input.ts';
import { User } from './user.entity.ts';

export const signUpSchema = z.strictObject({ email, username, password });
export const signInSchema = z.strictObject({
  login: z.string().min(1).max(320).meta({ description: 'The email address or the username (either case).' }),
  password: z.string().min(1).max(256),
});
export const changePasswordSchema = z.strictObject({
  currentPassword: z.string().max(256).optional().meta({ description: 'Required when the user has a password; omitted to set a first one.' }),
  newPassword: password,
});

/** Failed sign-ins: per account (the login as typed, lower-cased) and per client address. */
export interface SignInThrottles {
  perAccount: FailureThrottle;
  perAddress: FailureThrottle;
}

/** What a unique violation of the user table was about. */
function takenField(error: UniqueConstraintViolationException): 'email' | 'username' {
  return /email/.test(error.message) ? 'email' : 'username';
}

/**
 * Email-and-password accounts (the `credential` provider of spec 2.6): sign-up, sign-in and
 * password changes. The password's scrypt hash lives in the user's credential account; a wrong
 * password and an unknown login answer alike (same message, same work: an unknown login is checked
 * against a decoy hash), and both count against the login and the client's address.
 */
export class CredentialService {
  private readonly orm: MikroORM;
  private readonly sessions: SessionService;
  private readonly throttles: SignInThrottles;
  private readonly signUpEnabled: boolean;
  private readonly passwords: PasswordHasher;
  /** Called with the id of a user just signed up (the email verification mail). */
  private readonly onSignedUp: (userId: string) => Promise<void>;

  constructor(options: {
    orm: MikroORM; sessions: SessionService; throttles: SignInThrottles; signUpEnabled: boolean; passwords: PasswordHasher;
    onSignedUp?: (userId: string) => Promise<void>;
  }) {
    this.orm = options.orm;
    this.sessions = options.sessions;
    this.throttles = options.throttles;
    this.signUpEnabled = options.signUpEnabled;
    this.passwords = options.passwords;
    this.onSignedUp = options.onSignedUp ?? (async () => undefined);
  }

  async signUp(input: unknown, origin: SessionOrigin): Promise<IssuedSession> {
    if (!this.signUpEnabled) throw signUpClosed();
    const fields = parseInput(signUpSchema, input);
    const hash = await this.passwords.hash(fields.password);
    let issued: IssuedSession;
    try {
      issued = await this.orm.em.fork().transactional(async (em) => {
        await this.refuseTaken(em, fields.email, fields.username);
        const user = em.create(User, { email: fields.email, username: fields.username, permissions: [] });
        em.create(Account, { user, type: CREDENTIAL_PROVIDER, providerId: CREDENTIAL_PROVIDER, accountId: user.id, password: hash });
        await em.flush();
        return this.sessions.issue(user.id, origin, em);
      });
    } catch (error) {
      // Two sign-ups racing for one address or name: the unique indexes decide.
      if (error instanceof UniqueConstraintViolationException) throw userTaken(takenField(error));
      throw error;
    }
    await this.onSignedUp(issued.user.id);
    return issued;
  }

  async signIn(input: unknown, origin: SessionOrigin & { ip: string }): Promise<IssuedSession> {
    const { login, password } = parseInput(signInSchema, input);
    const accountKey = login.toLowerCase();
    await this.throttles.perAddress.refuseIfExhausted(origin.ip);
    await this.throttles.perAccount.refuseIfExhausted(accountKey);
    const em = this.orm.em.fork();
    const [found] = await em.getConnection().execute<{ id: string }[]>(
      `select id from "user" where lower(email) = lower(?) or lower(username) = lower(?) limit 1`, [login, login],
    );
    const user = found ? await em.findOne(User, { id: found.id }) : null;
    const account = user ? await em.findOne(Account, { user, providerId: CREDENTIAL_PROVIDER }) : null;
    const matches = await this.passwords.verify(password, account?.password ?? (await this.passwords.decoyHash()));
    if (!user || !account?.password || !matches) {
      await this.throttles.perAccount.count(accountKey);
      await this.throttles.perAddress.count(origin.ip);
      throw unauthorized('Invalid login or password');
    }
    return this.sessions.issue(user.id, origin);
  }

  /**
   * Sets a new password (or a first one, for a user who signed up through a provider). Every
   * session of the user ends, in the same transaction; the caller gets a new one.
   */
  async changePassword(userId: string, input: unknown, origin: SessionOrigin & { ip: string }): Promise<IssuedSession> {
    const { currentPassword, newPassword } = parseInput(changePasswordSchema, input);
    const em = this.orm.em.fork();
    const existing = await em.findOne(Account, { user: userId, providerId: CREDENTIAL_PROVIDER });
    if (existing?.password) {
      await this.throttles.perAccount.refuseIfExhausted(`user:${userId}`);
      if (currentPassword === undefined || !(await this.passwords.verify(currentPassword, existing.password))) {
        await this.throttles.perAccount.count(`user:${userId}`);
        throw forbidden('The current password is wrong', 'currentPassword');
      }
    }
    const hash = await this.passwords.hash(newPassword);
    const issued = await this.orm.em.fork().transactional(async (em) => {
      const account = await em.findOne(Account, { user: userId, providerId: CREDENTIAL_PROVIDER });
      if (account) account.password = hash;
      else em.create(Account, { user: userId, type: CREDENTIAL_PROVIDER, providerId: CREDENTIAL_PROVIDER, accountId: userId, password: hash });
      await em.flush();
      await this.sessions.revokeAll(userId, em);
      return this.sessions.issue(userId, origin, em);
    });
    this.sessions.forget(userId);
    return issued;
  }

  private async refuseTaken(em: EntityManager, address: string, name: string): Promise<void> {
    const [row] = await em.getConnection().execute<{ email_taken: boolean; username_taken: boolean }[]>(
      `select exists (select 1 from "user" where lower(email) = lower(?)) as email_taken,
              exists (select 1 from "user" where lower(username) = lower(?)) as username_taken`,
      [address, name],
    );
    if (row?.email_taken) throw userTaken('email');
    if (row?.username_taken) throw userTaken('username');
  }
}
