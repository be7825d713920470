import { LockMode, UniqueConstraintViolationException } from '@mikro-orm/core';
import type { MikroORM } from '@mikro-orm/postgresql';
import { accountConflict, badRequest, missingArgument, notFound } from '../../errors/errors.ts';
import { User } from '../users/user.entity.ts';
import { parseInput } from '../validation.ts';
import { Account } from './account.entity.ts';
import { isManualProvider, isSignInProvider, linkManualAccountSchema, MANUAL_PROVIDERS, minimalAccountView } from './account-data.ts';

/** A user's linked accounts (spec 2.6), as the user manages them (docs/accounts.md, Linked accounts). */
export class AccountService {
  private readonly orm: MikroORM;

  constructor(options: { orm: MikroORM }) {
    this.orm = options.orm;
  }

  async list(userId: string) {
    const accounts = await this.orm.em.fork().find(Account, { user: userId }, { orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
    return accounts.map(minimalAccountView);
  }

  /**
   * Links (or, for a provider the user already has, updates) a manual game account. Only
   * minecraft-manual and hytale-manual: OAuth providers link through their sign-in, the credential
   * account through sign-up. Answers whether it was created.
   */
  async linkManual(userId: string, input: unknown): Promise<{ created: boolean; account: ReturnType<typeof minimalAccountView> }> {
    const providerId = input !== null && typeof input === 'object' ? (input as { providerId?: unknown }).providerId : null;
    // The union picks its variant by providerId: without one, zod could only say "no variant matched".
    if (providerId === undefined) throw missingArgument('providerId');
    if (typeof providerId === 'string' && !isManualProvider(providerId)) {
      throw badRequest(`Only ${MANUAL_PROVIDERS.join(' and ')} accounts are linked here; ${providerId} links through its sign-in`, providerId);
    }
    const { providerId: provider, accountId, data } = parseInput(linkManualAccountSchema, input);
    if (accountId !== undefined && accountId.replace(/-/g, '').toLowerCase() !== data.targetId.replace(/-/g, '')) {
      throw badRequest('Invalid accountId: must equal data.targetId', 'accountId');
    }
    try {
      return await this.orm.em.fork().transactional(async (em) => {
        const taken = await em.findOne(Account, { providerId: provider, accountId: data.targetId });
        if (taken && taken.user.id !== userId) throw accountConflict('taken', `That ${provider} account is linked to another user`, data.targetId);
        const own = taken ?? (await em.findOne(Account, { user: userId, providerId: provider }));
        if (own) {
          em.assign(own, { accountId: data.targetId, data });
        } else {
          em.create(Account, { user: em.getReference(User, userId), type: 'manual', providerId: provider, accountId: data.targetId, data });
        }
        await em.flush();
        return { created: !own, account: minimalAccountView({ providerId: provider, accountId: data.targetId, data }) };
      });
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException) throw accountConflict('taken', `That ${provider} account is linked to another user`, data.targetId);
      throw error;
    }
  }

  /** Unlinks the user's account of `providerId`; never the last one the user can sign in with. */
  async unlink(userId: string, providerId: string): Promise<void> {
    await this.orm.em.fork().transactional(async (em) => {
      // Serialises the user's unlinks: two at once cannot each leave the other as the last way in.
      await em.findOneOrFail(User, { id: userId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
      const accounts = await em.find(Account, { user: userId });
      const account = accounts.find((candidate) => candidate.providerId === providerId);
      if (!account) throw notFound('linked account', providerId);
      if (isSignInProvider(providerId) && !accounts.some((other) => other !== account && isSignInProvider(other.providerId))) {
        throw accountConflict('lastSignIn', 'This is the last way to sign in: link another provider or set a password first', providerId);
      }
      em.remove(account);
      await em.flush();
    });
  }
}
