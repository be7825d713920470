import { AuthorizationResponseError, ClientError, ResponseBodyError, WWWAuthenticateChallengeError } from 'openid-client';
import { OAuthProviderError } from './provider.ts';

/**
 * What openid-client throws, as an OAuthProviderError: the provider's own error code
 * (access_denied in the redirect, invalid_grant at the token endpoint), or the check that failed
 * (state, nonce, ID token signature...). Anything else (a bug of ours) passes through.
 */
export function asProviderError(error: unknown): unknown {
  if (error instanceof OAuthProviderError) return error;
  if (error instanceof AuthorizationResponseError || error instanceof ResponseBodyError) {
    return new OAuthProviderError(error.error, error.error_description ?? error.message, { cause: error });
  }
  if (error instanceof WWWAuthenticateChallengeError) return new OAuthProviderError('invalid_token', 'The provider refused its own access token', { cause: error });
  if (error instanceof ClientError) return new OAuthProviderError(error.code ?? 'invalid_response', error.message, { cause: error });
  // fetch() failing: the provider could not be reached.
  if (error instanceof TypeError && error.message === 'fetch failed') {
    return new OAuthProviderError('unreachable', 'The provider could not be reached', { cause: error });
  }
  return error;
}
