import { z } from 'zod';
import { createDocument, type ZodOpenApiOperationObject, type ZodOpenApiPathsObject, type ZodOpenApiResponseObject, type ZodOpenApiResponsesObject } from 'zod-openapi';
import { errorBodySchema } from './schemas.ts';
import { PATH_PARAMETERS, rateLimitHeaders, retryAfter, TAGS, type Access, type OperationDoc } from './operation-doc.ts';
import { operations } from './operations.ts';

export type OpenApiDocument = ReturnType<typeof createDocument>;

/** What an error status means when the route says nothing more specific. */
const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid request: a field, parameter or header (the Error names it in `value`), an invalid Content-Length, or %00 in the query.',
  401: 'Missing or invalid credentials, or a team key of another team.',
  402: 'A plan limit is reached (messageKey error.teamLimits.<limit>).',
  403: 'The key lacks the permission or scope (error.forbidden), or the change is to an archived team (error.team.archived).',
  404: 'Not found.',
  408: 'The request body stopped arriving.',
  409: 'Conflict.',
  413: 'The request body is too large.',
  415: 'Unsupported media type.',
  422: 'The request cannot be processed as sent.',
  429: 'Rate limit of the key exceeded, or too many failed authentications from this address; retry after Retry-After seconds.',
  431: 'The request headers are too large.',
  500: 'Unexpected error; the Error value holds the request id.',
  503: 'The service is starting, draining, or its database is unavailable; retry after Retry-After seconds.',
};

/** Answers any route may give, whatever it does. */
const COMMON_ERRORS = [400, 431, 500, 503];

/** Errors implied by who may call. */
const ACCESS_ERRORS: Record<Access, number[]> = {
  teamApiKey: [401, 403, 429],
  teamApiKeyOnly: [401, 429],
  sessionToken: [401, 429],
  authSecret: [401, 429],
  metricsToken: [401, 403],
  public: [],
};

const SECURITY: Record<Access, Record<string, string[]>[]> = {
  teamApiKey: [{ teamApiKey: [] }, { sessionToken: [] }],
  teamApiKeyOnly: [{ teamApiKey: [] }],
  sessionToken: [{ sessionToken: [] }],
  authSecret: [{ authSecret: [] }],
  // A token when METRICS_TOKEN is set; nothing from loopback otherwise.
  metricsToken: [{ metricsToken: [] }, {}],
  public: [],
};

/** Spec section 5.5's schemes as it names them, plus the metrics token; this service accepts teamApiKey, sessionToken, authSecret and metricsToken. */
const SECURITY_SCHEMES = {
  teamApiKey: { type: 'http', scheme: 'bearer', description: 'A team API key: `Authorization: Bearer <key>` (`tws_...`). Media and team routes.' },
  sessionToken: {
    type: 'http', scheme: 'bearer',
    description: 'A user\'s session token (`tss_...`, from sign-in): `Authorization: Bearer <token>`. The user\'s own routes, and every team route, acting with the user\'s membership of that team (401 for a team it is not a member of).',
  },
  authSecret: { type: 'apiKey', in: 'header', name: 'authSecret', description: 'The operator secret (AUTH_SECRET). Operator routes.' },
  metricsToken: { type: 'http', scheme: 'bearer', description: 'METRICS_TOKEN, for GET /metrics when it is set.' },
  accessToken: { type: 'apiKey', in: 'header', name: 'Authorization', description: 'An access token. Not used by this service.' },
  apiKey: { type: 'apiKey', in: 'header', name: 'Authorization', description: 'A game server or integration key. Not used by this service.' },
  gameLinkSecret: { type: 'apiKey', in: 'header', name: 'Authorization', description: 'Not used by this service.' },
  voiceSecret: { type: 'apiKey', in: 'header', name: 'voiceSecret', description: 'Not used by this service.' },
  discordBotSecret: { type: 'apiKey', in: 'header', name: 'discordBotSecret', description: 'Not used by this service.' },
  backupRunnerSecret: { type: 'apiKey', in: 'header', name: 'backupRunnerSecret', description: 'Not used by this service.' },
} as const;

const DESCRIPTION = [
  'Team-scoped media upload service for game-server fleets.',
  '',
  'Every answer carries `X-Request-Id` (send your own, 1-128 characters of `A-Z a-z 0-9 . _ : -`, to find a request in the logs).',
  'Errors use one body (the Error schema) with a stable `messageKey`. Sizes are bytes, except the plan limit maxTeamStorage (KiB).',
].join('\n');

/** `/v1/cdn/media/:teamId` → `/v1/cdn/media/{teamId}`. */
export function openApiPath(pattern: string): string {
  return pattern.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

function pathParameters(pattern: string): z.ZodObject | undefined {
  const names = [...pattern.matchAll(/:([A-Za-z0-9_]+)/g)].map((match) => match[1]!);
  if (names.length === 0) return undefined;
  return z.object(
    Object.fromEntries(
      names.map((name) => {
        const schema = PATH_PARAMETERS[name];
        if (!schema) throw new Error(`OpenAPI: no description of the path parameter :${name} (add it to PATH_PARAMETERS)`);
        return [name, schema];
      }),
    ),
  );
}

function responses(doc: OperationDoc): ZodOpenApiResponsesObject {
  const result: Record<string, ZodOpenApiResponseObject> = {};
  for (const [status, response] of Object.entries(doc.responses)) {
    // A JSON body, other media types, or both (an answer that depends on Accept).
    const content = response.schema || response.content
      ? {
        ...(response.schema && { 'application/json': { schema: response.schema } }),
        ...Object.fromEntries(Object.entries(response.content ?? {}).map(([type, schema]) => [type, { schema }])),
      }
      : undefined;
    const headers = response.headers ?? (doc.access === 'teamApiKey' || doc.access === 'teamApiKeyOnly' || doc.access === 'sessionToken' ? rateLimitHeaders : undefined);
    result[status] = { description: response.description, ...(content && { content }), ...(headers && { headers }) };
  }
  const errors = new Set([...COMMON_ERRORS, ...ACCESS_ERRORS[doc.access], ...Object.keys(doc.errors).map(Number)]);
  for (const status of [...errors].sort((a, b) => a - b)) {
    const description = doc.errors[status] ?? ERROR_DESCRIPTIONS[status];
    if (!description) throw new Error(`OpenAPI: no description for error status ${status} of ${doc.operationId}`);
    const headers = status === 429 || status === 503 || doc.retryAfterOn?.includes(status) ? z.object({ 'Retry-After': retryAfter }) : undefined;
    result[String(status)] = {
      description,
      content: { 'application/json': { schema: errorBodySchema } },
      ...(headers && { headers }),
    };
  }
  return result as ZodOpenApiResponsesObject;
}

function operation(pattern: string, doc: OperationDoc): ZodOpenApiOperationObject {
  const path = pathParameters(pattern);
  const requestParams = {
    ...(path && { path }),
    ...(doc.query && { query: doc.query }),
    ...(doc.headers && { header: doc.headers }),
  };
  const bodyContent = doc.body ? { 'application/json': doc.body } : doc.bodyContent;
  return {
    operationId: doc.operationId,
    summary: doc.summary,
    ...(doc.description && { description: doc.description }),
    tags: [doc.tag],
    security: SECURITY[doc.access],
    ...(Object.keys(requestParams).length > 0 && { requestParams }),
    ...(bodyContent && {
      requestBody: {
        required: doc.bodyRequired ?? false,
        content: Object.fromEntries(Object.entries(bodyContent).map(([type, schema]) => [type, { schema }])),
      },
    }),
    responses: responses(doc),
  };
}

/**
 * The OpenAPI 3.1 document of `registry` (by default, every route of the service). `serverUrl`
 * (PUBLIC_URL) becomes its `servers` entry, so tools that read the document know where to send calls.
 */
export function createOpenApiDocument(registry: Record<string, OperationDoc> = operations, serverUrl?: string): OpenApiDocument {
  const paths: ZodOpenApiPathsObject = {};
  for (const [key, doc] of Object.entries(registry)) {
    const [method, pattern] = key.split(' ') as [string, string];
    const item = (paths[openApiPath(pattern)] ??= {});
    (item as Record<string, ZodOpenApiOperationObject>)[method.toLowerCase()] = operation(pattern, doc);
  }
  return createDocument({
    openapi: '3.1.0',
    info: { title: 'Media upload service', version: '1.0.0', description: DESCRIPTION },
    ...(serverUrl !== undefined && { servers: [{ url: serverUrl, description: 'This service (PUBLIC_URL)' }] }),
    tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
    paths,
    components: { securitySchemes: SECURITY_SCHEMES },
  });
}

const cached = new Map<string, { document: OpenApiDocument; json: string }>();

/** The service's document served from `serverUrl` (PUBLIC_URL), built once per process and address. */
export function openApiDocument(serverUrl?: string): { document: OpenApiDocument; json: string } {
  const key = serverUrl ?? '';
  let entry = cached.get(key);
  if (!entry) {
    const document = createOpenApiDocument(operations, serverUrl);
    entry = { document, json: JSON.stringify(document) };
    cached.set(key, entry);
  }
  return entry;
}
