// Calls the service's API with `Authorization: Bearer <token>` (never a key or token in a URL).
// Answers that are not 2xx become an ApiError carrying the spec's error body.

export class ApiError extends Error {
  constructor(status, body, retryAfter) {
    super(body?.message ?? `The service answered ${status}`);
    this.name = 'ApiError';
    this.status = status;
    this.messageKey = body?.messageKey ?? null;
    this.value = body?.value ?? null;
    this.retryAfter = retryAfter;
  }
}

/** A network failure (offline, connection refused): status 0. */
export function networkError(cause) {
  const error = new ApiError(0, { message: String(cause?.message ?? cause) }, null);
  error.cause = cause;
  return error;
}

export async function apiRequest(token, method, path, { body, headers = {}, query, signal } = {}) {
  const url = new URL(path, location.origin);
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value !== undefined && value !== null && value !== '') url.searchParams.set(name, String(value));
  }
  const init = { method, headers: { ...headers }, signal };
  if (token) init.headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(url, init);
  } catch (error) {
    if (error?.name === 'AbortError') throw error;
    throw networkError(error);
  }
  const text = await response.text();
  let parsed = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  if (!response.ok) throw new ApiError(response.status, parsed, retryAfterOf(response.headers));
  return parsed;
}

export function retryAfterOf(headers) {
  const value = Number(headers.get('Retry-After'));
  return Number.isFinite(value) && value > 0 ? value : null;
}
