import { defineEntity, p } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { User } from '../users/user.entity.ts';

/**
 * One OAuth sign-in in progress (docs/accounts.md), between the start and the provider's redirect
 * back: only the SHA-256 of the state travels back to us; the PKCE verifier and the nonce never
 * leave the service. Used once (deleted by the callback), valid 10 minutes.
 */
export const OAuthStateSchema = defineEntity({
  name: 'OAuthState',
  tableName: 'oauth_state',
  properties: {
    id: p.uuid().primary().onCreate(() => randomUUID()),
    stateHash: p.string().length(64),
    providerId: p.string().length(64),
    codeVerifier: p.string().length(128),
    nonce: p.string().length(128).nullable(),
    /** Set when a signed-in user started it: the provider account is linked to this user. */
    linkUser: () => p.manyToOne(User).deleteRule('cascade').nullable(),
    returnTo: p.text().nullable(),
    /** Echoed in the fragment of the redirect to returnTo (the browser app's login-CSRF check). */
    clientState: p.string().length(128).nullable(),
    expiresAt: p.datetime(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});

export class OAuthState extends OAuthStateSchema.class {}
OAuthStateSchema.setClass(OAuthState);
