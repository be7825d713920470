import { checkCredential, type FailureThrottle } from '../../../auth/failure-throttle.ts';
import type { VerificationService } from '../../../domain/verification/verification.service.ts';
import { json, type HttpRequest, type Route } from '../../types.ts';
import { publicRouteBuilder, userRouteBuilder, type UserRouteDeps } from '../route-builder.ts';

export interface VerificationRouteDeps extends UserRouteDeps {
  verification: VerificationService;
  /** Failed confirms count here per client address, with bad keys and wrong authSecret values; past the budget: 429. */
  authFailures: FailureThrottle;
  maxJsonBodyBytes: number;
}

/**
 * A public route whose body carries a token: a client address that keeps sending wrong, used or
 * expired tokens is refused with 429 like one that keeps sending wrong keys.
 */
function withTokenThrottle<T>(request: HttpRequest, failures: FailureThrottle, run: () => Promise<T>): Promise<T> {
  return checkCredential(failures, request.remoteAddress, (error) => error.messageKey.startsWith('error.verification.token'), run);
}

/** Verification action tokens (spec 2.7), email verification and the account export download (docs/accounts.md). */
export function verificationRoutes(deps: VerificationRouteDeps): Route[] {
  const { verification } = deps;
  const route = userRouteBuilder(deps, deps.maxJsonBodyBytes);
  const publicRoute = publicRouteBuilder(deps.maxJsonBodyBytes);
  return [
    publicRoute('POST', '/v1/auth/verification-tokens/confirm', async ({ request, body }) => {
      const parsed = await body();
      return json(200, await withTokenThrottle(request, deps.authFailures, () => verification.confirm(parsed)));
    }),
    publicRoute('POST', '/v1/auth/verify-email', async ({ request, body }) => {
      const parsed = await body();
      return json(200, await withTokenThrottle(request, deps.authFailures, () => verification.verifyEmail(parsed)));
    }),
    publicRoute('GET', '/v1/account-exports/:userId/:exportId', async ({ request, param }) => {
      const userId = param('userId');
      const exportId = param('exportId');
      const archive = await verification.openExport(userId, exportId, request.query);
      return json(200, archive, {
        'Content-Disposition': `attachment; filename="account-export-${userId}.json"`,
        'Cache-Control': 'private, no-store',
      });
    }),
    route('GET', '/v1/users/me/verification-tokens', async (call) => json(200, await verification.progress(call.userId))),
    route('POST', '/v1/users/me/email/verification', async (call) => {
      await verification.resendEmailVerification(call.userId);
      return { status: 202 };
    }),
    route('POST', '/v1/users/me/email', async (call) => json(202, await verification.startEmailChange(call.userId, await call.body()))),
    route('POST', '/v1/users/me/deletion', async (call) => json(202, await verification.startAccountDelete(call.userId))),
    route('POST', '/v1/users/me/export', async (call) => json(202, await verification.startAccountExport(call.userId))),
    route('POST', '/v1/teams/:teamId/ownership-transfer', async (call) =>
      json(202, await verification.startOwnershipTransfer(call.userId, call.param('teamId'), await call.body())),
    ),
    route('POST', '/v1/teams/:teamId/deletion', async (call) => json(202, await verification.startTeamDelete(call.userId, call.param('teamId')))),
  ];
}
