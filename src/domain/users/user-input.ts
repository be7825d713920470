import { z } from 'zod';
import { MAX_PASSWORD_LENGTH } from '../../auth/password-hash.ts';

/** Spec 2.5: 3-20 characters of a-z A-Z 0-9 _. */
export const username = z.string().regex(/^[a-zA-Z0-9_]{3,20}$/, 'must be 3-20 characters of a-z A-Z 0-9 _');
export const email = z.email({ message: 'must be an email address' }).max(320);
/** At least 10 characters; length matters more than character classes (NIST SP 800-63B). */
export const password = z.string().min(10, 'must be at least 10 characters').max(MAX_PASSWORD_LENGTH, `must be at most ${MAX_PASSWORD_LENGTH} characters`);
