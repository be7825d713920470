import t from 'tap';
import {
  badRequest,
  conflict,
  forbidden,
  internalServerError,
  methodNotAllowed,
  missingArgument,
  notFound,
  payloadTooLarge,
  routeNotFound,
  serviceUnavailable,
  teamLimit,
  toServiceError,
  tooManyRequests,
  unauthorized,
  unsupportedMediaType,
  uploadBusy,
} from '../../src/errors/errors.ts';
import { ServiceError } from '../../src/errors/service-error.ts';
import type { ErrorBody } from '../../src/errors/service-error.ts';

interface Case {
  label: string;
  error: ServiceError;
  body: ErrorBody;
  headers?: Record<string, string>;
}

const cases: Case[] = [
  {
    label: 'unauthorized()',
    error: unauthorized(),
    body: { name: 'UnauthorizedError', status: 401, messageKey: 'error.unauthorized', message: 'Authentication failed' },
  },
  {
    label: 'unauthorized(message)',
    error: unauthorized('API key revoked'),
    body: { name: 'UnauthorizedError', status: 401, messageKey: 'error.unauthorized', message: 'API key revoked' },
  },
  {
    label: 'forbidden()',
    error: forbidden(),
    body: { name: 'ForbiddenError', status: 403, messageKey: 'error.forbidden', message: 'User is forbidden to perform this action' },
  },
  {
    label: 'forbidden(message, value)',
    error: forbidden('Missing permission', 'media.upload'),
    body: { name: 'ForbiddenError', status: 403, messageKey: 'error.forbidden', message: 'Missing permission', value: 'media.upload' },
  },
  {
    label: 'notFound()',
    error: notFound(),
    body: { name: 'NotFoundError', status: 404, messageKey: 'error.notFound', message: 'Could not find resource' },
  },
  {
    label: 'notFound(what, value)',
    error: notFound('media file', 'f-1'),
    body: { name: 'NotFoundError', status: 404, messageKey: 'error.notFound', message: 'Could not find media file', value: 'f-1' },
  },
  {
    label: 'routeNotFound(method, path)',
    error: routeNotFound('GET', '/v1/nope'),
    body: { name: 'NotFoundError', status: 404, messageKey: 'error.notFound', message: 'There is no such route: GET /v1/nope (GET /docs lists the routes)' },
  },
  {
    label: 'badRequest()',
    error: badRequest(),
    body: { name: 'BadRequestError', status: 400, messageKey: 'error.badRequest', message: 'The request was formatted incorrectly.' },
  },
  {
    label: 'badRequest(message, string value)',
    error: badRequest('Invalid size', 'size'),
    body: { name: 'BadRequestError', status: 400, messageKey: 'error.badRequest', message: 'Invalid size', value: 'size' },
  },
  {
    label: 'badRequest(message, numeric value)',
    error: badRequest('Too many', 0),
    body: { name: 'BadRequestError', status: 400, messageKey: 'error.badRequest', message: 'Too many', value: 0 },
  },
  {
    label: 'badRequest(message, empty string value)',
    error: badRequest('Empty', ''),
    body: { name: 'BadRequestError', status: 400, messageKey: 'error.badRequest', message: 'Empty', value: '' },
  },
  {
    label: 'missingArgument(name)',
    error: missingArgument('teamId'),
    body: { name: 'MissingArgumentError', status: 400, messageKey: 'error.missingArgument.teamId', message: 'Missing argument: teamId.', value: 'teamId' },
  },
  {
    label: 'teamLimit(key, message)',
    error: teamLimit('maxTeamStorage', 'Team storage is full'),
    body: { name: 'TeamLimitError', status: 402, messageKey: 'error.teamLimits.maxTeamStorage', message: 'Team storage is full' },
  },
  {
    label: 'teamLimit(key, message, value)',
    error: teamLimit('maxMediaFileSize', 'File too large', 10_000_000),
    body: { name: 'TeamLimitError', status: 402, messageKey: 'error.teamLimits.maxMediaFileSize', message: 'File too large', value: 10_000_000 },
  },
  {
    label: 'conflict(message)',
    error: conflict('Already exists'),
    body: { name: 'ConflictError', status: 409, messageKey: 'error.conflict', message: 'Already exists' },
  },
  {
    label: 'conflict(message, value)',
    error: conflict('Name taken', 'logo.png'),
    body: { name: 'ConflictError', status: 409, messageKey: 'error.conflict', message: 'Name taken', value: 'logo.png' },
  },
  {
    label: 'methodNotAllowed(method, path, allowed)',
    error: methodNotAllowed('PATCH', '/v1/media', ['GET', 'POST']),
    body: { name: 'MethodNotAllowedError', status: 405, messageKey: 'error.methodNotAllowed', message: 'Method PATCH is not allowed on /v1/media' },
    headers: { Allow: 'GET, POST' },
  },
  {
    label: 'payloadTooLarge(limit)',
    error: payloadTooLarge(1024),
    body: { name: 'PayloadTooLargeError', status: 413, messageKey: 'error.payloadTooLarge', message: 'The request body is larger than 1024 bytes', value: 1024 },
  },
  {
    label: 'unsupportedMediaType(message)',
    error: unsupportedMediaType('Only images'),
    body: { name: 'UnsupportedMediaTypeError', status: 415, messageKey: 'error.unsupportedMediaType', message: 'Only images' },
  },
  {
    label: 'unsupportedMediaType(message, value)',
    error: unsupportedMediaType('Only images', 'text/plain'),
    body: { name: 'UnsupportedMediaTypeError', status: 415, messageKey: 'error.unsupportedMediaType', message: 'Only images', value: 'text/plain' },
  },
  {
    label: 'tooManyRequests(seconds)',
    error: tooManyRequests(7),
    body: { name: 'TooManyRequestsError', status: 429, messageKey: 'error.tooManyRequests', message: 'Rate limit exceeded', value: 7 },
    headers: { 'Retry-After': '7' },
  },
  {
    label: 'uploadBusy(seconds)',
    error: uploadBusy(5),
    body: {
      name: 'ServiceUnavailableError',
      status: 503,
      messageKey: 'error.media.uploadBusy',
      message: 'Upload capacity is temporarily busy, retry later',
      value: 5,
    },
    headers: { 'Retry-After': '5' },
  },
  {
    label: 'serviceUnavailable()',
    error: serviceUnavailable(),
    body: { name: 'ServiceUnavailableError', status: 503, messageKey: 'error.serviceUnavailable', message: 'The service is not accepting requests right now' },
    headers: { 'Retry-After': '5' },
  },
  {
    label: 'serviceUnavailable(message, seconds)',
    error: serviceUnavailable('Shutting down', 30),
    body: { name: 'ServiceUnavailableError', status: 503, messageKey: 'error.serviceUnavailable', message: 'Shutting down' },
    headers: { 'Retry-After': '30' },
  },
  {
    label: 'internalServerError()',
    error: internalServerError(),
    body: { name: 'ServiceError', status: 500, messageKey: 'error.internalServerError', message: 'An unexpected error occurred' },
  },
  {
    label: 'internalServerError(requestId)',
    error: internalServerError('req-42'),
    body: { name: 'ServiceError', status: 500, messageKey: 'error.internalServerError', message: 'An unexpected error occurred', value: 'req-42' },
  },
];

t.test('every factory renders exactly the spec body fields', (t) => {
  for (const { label, error, body, headers } of cases) {
    t.test(label, (t) => {
      t.type(error, ServiceError);
      t.type(error, Error);
      const rendered = error.toBody();
      t.strictSame(rendered, body, 'body');
      t.same(Object.keys(rendered).sort(), Object.keys(body).sort(), 'no other fields');
      t.equal('value' in rendered, 'value' in body, 'value only when given');
      t.strictSame(JSON.parse(JSON.stringify(rendered)), body, 'survives JSON');
      t.strictSame(error.headers, headers ?? {}, 'headers');
      t.equal(error.name, body.name);
      t.equal(error.status, body.status);
      t.equal(error.messageKey, body.messageKey);
      t.equal(error.message, body.message);
      t.end();
    });
  }
  t.end();
});

t.test('Retry-After is on tooManyRequests and uploadBusy, Allow on methodNotAllowed', (t) => {
  t.equal(tooManyRequests(1).headers['Retry-After'], '1');
  t.equal(tooManyRequests(3600).headers['Retry-After'], '3600');
  t.equal(uploadBusy(12).headers['Retry-After'], '12');
  t.equal(methodNotAllowed('PUT', '/x', ['GET']).headers.Allow, 'GET');
  t.equal(methodNotAllowed('PUT', '/x', ['GET', 'HEAD', 'DELETE']).headers.Allow, 'GET, HEAD, DELETE');
  t.notOk('Retry-After' in badRequest().headers);
  t.notOk('Allow' in notFound().headers);
  t.end();
});

t.test('ServiceError keeps its cause and a stack', (t) => {
  const cause = new Error('root');
  const error = new ServiceError({ name: 'X', status: 418, messageKey: 'error.x', message: 'x', cause });
  t.equal(error.cause, cause);
  t.type(error.stack, 'string');
  t.strictSame(error.toBody(), { name: 'X', message: 'x', status: 418, messageKey: 'error.x' }, 'the cause is not rendered');
  t.end();
});

t.test('toServiceError keeps ServiceErrors as they are', (t) => {
  for (const { error } of cases) t.equal(toServiceError(error), error);
  const custom = new ServiceError({ name: 'CustomError', status: 418, messageKey: 'error.custom', message: 'teapot' });
  t.equal(toServiceError(custom, 'req-1'), custom, 'a request id does not replace it');
  t.end();
});

t.test('toServiceError turns anything else into 500 error.internalServerError without its details', (t) => {
  const secret = 'password=hunter2 at db.internal:5432';
  class CustomError extends Error {}
  const thrown: unknown[] = [
    new Error(secret),
    new TypeError(secret),
    new CustomError(secret),
    Object.assign(new Error(secret), { status: 404, messageKey: 'error.notFound' }),
    { name: 'ServiceError', status: 400, message: secret, messageKey: 'error.badRequest' },
    secret,
    42,
    null,
    undefined,
  ];
  for (const value of thrown) {
    const error = toServiceError(value);
    t.type(error, ServiceError);
    t.equal(error.status, 500);
    t.equal(error.messageKey, 'error.internalServerError');
    t.equal(error.name, 'ServiceError');
    t.equal(error.message, 'An unexpected error occurred');
    t.notMatch(JSON.stringify(error.toBody()), 'hunter2', 'the original text does not leak');
    t.strictSame(error.headers, {});
    t.notOk('value' in error.toBody());
  }
  const withId = toServiceError(new Error(secret), 'req-7');
  t.strictSame(withId.toBody(), {
    name: 'ServiceError',
    message: 'An unexpected error occurred',
    status: 500,
    messageKey: 'error.internalServerError',
    value: 'req-7',
  });
  t.end();
});
