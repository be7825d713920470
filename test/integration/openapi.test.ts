import { Validator } from '@seriousme/openapi-schema-validator';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { createOpenApiDocument, openApiDocument, openApiPath } from '../../src/http/openapi/document.ts';
import { operations } from '../../src/http/openapi/operations.ts';
import { AnswerChecker, answerChecker } from '../helpers/openapi-answers.ts';
import { startTestServer } from '../helpers/server.ts';

const { document } = openApiDocument();
const repo = fileURLToPath(new URL('../..', import.meta.url));

interface LintProblem {
  ruleId: string;
  severity: 'error' | 'warn';
  message: string;
  location: { pointer: string }[];
}

/** `redocly lint` (the repository's redocly.yaml) of `text`: its totals and problems. */
async function redoclyLint(text: string): Promise<{ totals: { errors: number; warnings: number }; problems: LintProblem[] }> {
  const dir = await mkdtemp(join(tmpdir(), 'media-lint-'));
  try {
    const file = join(dir, 'openapi.json');
    await writeFile(file, text);
    const cli = createRequire(import.meta.url).resolve('@redocly/cli/bin/cli.js');
    const args = [cli, 'lint', file, '--config', join(repo, 'redocly.yaml'), '--format=json'];
    const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' };
    // Exit 1 when the document has errors: the JSON report is on stdout either way.
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile(process.execPath, args, { cwd: dir, env, maxBuffer: 64 * 1024 * 1024, timeout: 120_000 }, (error, out, err) => {
        if (out.trim().startsWith('{')) resolve(out);
        else reject(new Error(`redocly lint gave no report: ${error?.message ?? ''} ${err}`));
      });
    });
    return JSON.parse(stdout);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The spec's security schemes that no route of this service uses (redocly.yaml says why they stay). */
const UNUSED_SPEC_SCHEMES = ['accessToken', 'apiKey', 'gameLinkSecret', 'voiceSecret', 'discordBotSecret', 'backupRunnerSecret'];

/** `METHOD /openapi/{path}` of every operation of the document. */
function documentedOperations(doc: typeof document): string[] {
  const found: string[] = [];
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of ['get', 'head', 'post', 'put', 'patch', 'delete', 'options']) {
      if ((item as Record<string, unknown>)[method]) found.push(`${method.toUpperCase()} ${path}`);
    }
  }
  return found.sort();
}

/** Routes mounted but not described, and operations described but not mounted (HEAD is served by the GET route). */
function compareRoutes(mounted: { method: string; pattern: string }[], doc: typeof document) {
  const routes = new Set(mounted.map((route) => `${route.method} ${openApiPath(route.pattern)}`));
  const described = documentedOperations(doc);
  return {
    undocumented: [...routes].filter((route) => !described.includes(route)).sort(),
    unmounted: described.filter((operation) => !routes.has(operation) && !routes.has(operation.replace(/^HEAD /, 'GET '))),
  };
}

t.test('the document passes the OpenAPI 3.1 schema validator', async (t) => {
  const validator = new Validator();
  const result = await validator.validate(JSON.parse(JSON.stringify(document)));
  t.same(result.errors, undefined, 'no validation errors');
  t.ok(result.valid, 'valid');
  t.equal(validator.version, '3.1');
});

t.test('the validator refuses a broken document (the check above can fail)', async (t) => {
  const broken = JSON.parse(JSON.stringify(document));
  delete broken.paths['/healthz'].get.responses;
  broken.paths['/healthz'].get.parameters = [{ in: 'nowhere', name: 'x' }];
  const result = await new Validator().validate(broken);
  t.notOk(result.valid);
});

t.test('version, security schemes of spec 5.5, operation ids, named schemas', async (t) => {
  t.equal(document.openapi, '3.1.0');
  t.equal(document.info.version, '1.0.0');
  const schemes = document.components?.securitySchemes ?? {};
  t.match(schemes['teamApiKey'], { type: 'http', scheme: 'bearer' });
  t.match(schemes['authSecret'], { type: 'apiKey', in: 'header', name: 'authSecret' });
  for (const name of ['sessionToken', 'accessToken', 'apiKey', 'gameLinkSecret', 'voiceSecret', 'discordBotSecret', 'backupRunnerSecret']) {
    t.ok(schemes[name], `scheme ${name}`);
  }
  for (const [name, header] of [['voiceSecret', 'voiceSecret'], ['discordBotSecret', 'discordBotSecret'], ['backupRunnerSecret', 'backupRunnerSecret']]) {
    t.match(schemes[name!], { type: 'apiKey', in: 'header', name: header });
  }

  const ids = Object.values(operations).map((operation) => operation.operationId);
  t.equal(new Set(ids).size, ids.length, 'operationIds are unique');
  const upload = document.paths?.['/v1/cdn/media/{teamId}/upload/file']?.post;
  t.equal(upload?.operationId, 'uploadMediaMultipart');
  t.same(upload?.security, [{ teamApiKey: [] }, { sessionToken: [] }], 'a team key or a session token');
  t.match(schemes['sessionToken'], { type: 'http', scheme: 'bearer' });
  t.same(document.paths?.['/v1/users/me']?.get?.security, [{ sessionToken: [] }]);
  t.match(upload?.responses?.['201'], { content: { 'application/json': { schema: { $ref: '#/components/schemas/UploadedMediaFile' } } } });
  t.match(document.paths?.['/v1/admin/teams']?.post?.security, [{ authSecret: [] }]);
  for (const name of ['Error', 'MediaFile', 'UploadedMediaFile', 'MediaList', 'Folder', 'Team', 'ApiKey', 'PlanLimits', 'Automation', 'Usage']) {
    t.ok(document.components?.schemas?.[name], `component ${name}`);
  }
  const listParameters = (document.paths?.['/v1/cdn/media/{teamId}']?.get?.parameters ?? []) as { $ref?: string }[];
  t.ok(listParameters.some((parameter) => parameter.$ref === '#/components/parameters/PageNumber'), 'pageNumber header');
  t.match(document.components?.parameters?.['PageSize'], { in: 'header', name: 'pageSize', schema: { maximum: 500, default: 50 } });
  // Every error status of every operation answers the spec's error body; only a file's 416 (a range outside it) has no body.
  const withoutErrorBody: string[] = [];
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    for (const [method, operation] of Object.entries(item as Record<string, { responses?: Record<string, { content?: Record<string, { schema?: { $ref?: string } }> }> }>)) {
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        if (Number(status) < 400 || response.content?.['application/json']?.schema?.$ref === '#/components/schemas/Error') continue;
        withoutErrorBody.push(`${method} ${path} ${status}`);
      }
    }
  }
  t.same(withoutErrorBody, ['get /media/team/{teamId}/{file} 416', 'head /media/team/{teamId}/{file} 416']);
});

t.test('request bodies are the schemas the services validate with', async (t) => {
  const schemas = document.components?.schemas ?? {};
  t.match(schemas['CreateTeamRequest'], { type: 'object', additionalProperties: false, required: ['name'], properties: { name: { minLength: 2, maxLength: 24 }, plan: { type: 'string', description: /DEFAULT_PLAN/ } } });
  t.match(schemas['FolderCreateRequest'], { required: ['name'], properties: { name: { maxLength: 100 }, retentionDays: {}, maxFiles: {}, defaultPublic: {} } });
  const bulk = schemas['BulkRequest'] as { oneOf?: { properties: { action: { const: string } } }[] };
  t.same(bulk.oneOf?.map((variant) => variant.properties.action.const), ['delete', 'move', 'setPublic', 'addTags', 'removeTags']);
});

t.test('every mounted route is described, and every described route is mounted', async (t) => {
  const server = await startTestServer(t);
  const routes = server.app.routes;
  t.ok(routes.length > 40, `${routes.length} routes mounted`);
  const { undocumented, unmounted } = compareRoutes(routes, document);
  t.same(undocumented, [], 'routes missing from the document: describe them in src/http/openapi/operations.ts (docs/design.md)');
  t.same(unmounted, [], 'operations of the document that no route serves');

  // The comparison can fail both ways.
  const partial = createOpenApiDocument(Object.fromEntries(Object.entries(operations).filter(([key]) => key !== 'GET /healthz')));
  t.same(compareRoutes(routes, partial).undocumented, ['GET /healthz']);
  t.same(compareRoutes([...routes, { method: 'POST', pattern: '/v1/new/:teamId' }], document).undocumented, ['POST /v1/new/{teamId}']);
  t.same(compareRoutes(routes.filter((route) => route.pattern !== '/metrics'), document).unmounted, ['GET /metrics']);
});

t.test('GET /v1/openapi.json and GET /docs, without authentication', async (t) => {
  const server = await startTestServer(t);
  const response = await server.request('GET', '/v1/openapi.json');
  t.equal(response.status, 200);
  t.match(response.headers.get('content-type'), /^application\/json/);
  t.same(response.body, { ...JSON.parse(JSON.stringify(document)), servers: [{ url: server.baseUrl, description: 'This service (PUBLIC_URL)' }] }, 'the generated document, served from PUBLIC_URL');

  const gzipped = await fetch(`${server.baseUrl}/v1/openapi.json`, { headers: { 'accept-encoding': 'gzip' } });
  t.equal(gzipped.headers.get('content-encoding'), 'gzip');
  t.same(await gzipped.json(), response.body, 'the same document, compressed');

  const page = await server.request('GET', '/docs');
  t.equal(page.status, 200);
  t.match(page.headers.get('content-type'), /^text\/html/);
  t.match(page.headers.get('content-security-policy'), /script-src 'self'/);
  t.match(page.body, /docs\/swagger-ui-bundle\.js/);
  t.notMatch(page.body, /https?:\/\//, 'no outside address on the page');

  for (const [asset, type] of [
    ['swagger-ui-bundle.js', /^text\/javascript/],
    ['docs-page.js', /^text\/javascript/],
    ['swagger-ui.css', /^text\/css/],
    ['favicon-32x32.png', /^image\/png$/],
  ] as const) {
    const answer = await fetch(`${server.baseUrl}/docs/${asset}`);
    t.equal(answer.status, 200, asset);
    t.match(answer.headers.get('content-type'), type, `${asset} content type`);
    t.equal(answer.headers.get('x-content-type-options'), 'nosniff');
    t.ok((await answer.arrayBuffer()).byteLength > 0);
  }
  const slashed = await server.request('GET', '/docs/');
  t.equal(slashed.status, 200, '/docs/ is the page too');
  t.match(slashed.headers.get('content-type'), /^text\/html/);
  t.match(slashed.body, /src="swagger-ui-bundle\.js"/, 'its links resolve under /docs/');
  t.notMatch(slashed.body, /docs\/swagger-ui/);
  const script = await (await fetch(`${server.baseUrl}/docs/docs-page.js`)).text();
  t.match(script, "new URL('../v1/openapi.json', document.currentScript.src)", 'the page script finds the document from its own address, on either page');

  const missing = await server.request('GET', '/docs/package.json');
  t.equal(missing.status, 404, 'only the listed assets are served');
  const traversal = await server.request('GET', '/docs/..%2Fpackage.json');
  t.equal(traversal.status, 404);
});

t.test('the served document passes redocly lint with no error; its only warnings are the unused spec schemes', async (t) => {
  const server = await startTestServer(t);
  const served = await fetch(`${server.baseUrl}/v1/openapi.json`);
  const report = await redoclyLint(await served.text());
  t.equal(report.totals.errors, 0, `no errors: ${JSON.stringify(report.problems.filter((problem) => problem.severity === 'error').map((problem) => problem.message))}`);
  t.same(
    report.problems.map((problem) => `${problem.ruleId} ${problem.location[0]?.pointer}`).sort(),
    UNUSED_SPEC_SCHEMES.map((name) => `no-unused-components #/components/securitySchemes/${name}`).sort(),
  );

  // The lint can fail: without servers, and with an operationId used twice.
  const broken = JSON.parse(JSON.stringify(document));
  broken.paths['/healthz'].get.operationId = broken.paths['/v1/openapi.json'].get.operationId;
  const failed = await redoclyLint(JSON.stringify(broken));
  t.ok(failed.totals.errors >= 2, `errors found in a broken document: ${failed.problems.filter((p) => p.severity === 'error').map((p) => p.ruleId).join(', ')}`);
  t.ok(failed.problems.some((problem) => problem.ruleId === 'no-empty-servers'));
  t.ok(failed.problems.some((problem) => problem.ruleId === 'operation-operationId-unique'));
});

t.test('docs/api.md states the document\'s numbers of paths and operations', async (t) => {
  const text = await readFile(join(repo, 'docs', 'api.md'), 'utf8');
  const stated = /# => \["1\.0\.0",(\d+),(\d+)\]\n```\n\nThat is (\d+) paths and (\d+) operations/.exec(text);
  t.ok(stated, 'docs/api.md has the jq example and its sentence');
  const paths = Object.keys(document.paths ?? {}).length;
  const operationCount = documentedOperations(document).length;
  t.same(stated?.slice(1).map(Number), [paths, operationCount, paths, operationCount], `docs/api.md must say ${paths} paths and ${operationCount} operations`);
});

t.test('the servers entry is PUBLIC_URL', async (t) => {
  const server = await startTestServer(t, { settings: { PUBLIC_URL: 'https://media.example.com/api' } });
  const response = await server.request('GET', '/v1/openapi.json');
  t.same(response.body.servers, [{ url: 'https://media.example.com/api', description: 'This service (PUBLIC_URL)' }]);
});

t.test('the answer checker fails answers that drift from the document', async (t) => {
  const checker = answerChecker();
  const team = '0f3c2b8e-4c1a-4d6e-9b7a-2f5d8e1c3a4b';
  const media = '5b1c7d9e-2a4f-4e8b-8c6d-1a3e5f7b9d2c';
  const ok = { method: 'GET', path: `/v1/cdn/media/${team}/${media}`, status: 200, contentType: 'application/json; charset=utf-8', text: '{"url":"http://x/y","uploadedBy":null}' };
  t.same(checker.check(ok), [], 'a matching answer passes');
  t.match(checker.check({ ...ok, text: '{"url":5,"uploadedBy":null}' }).join('\n'), /does not match .*\n.*\/url must be string/, 'wrong type');
  t.match(checker.check({ ...ok, text: '{"url":"u","uploadedBy":null,"extra":1}' }).join('\n'), /must NOT have additional properties/, 'field not in the document');
  t.match(checker.check({ ...ok, status: 418 }).join('\n'), /status 418 is not documented/, 'undocumented status');
  t.match(checker.check({ ...ok, status: 404, text: '{"message":"no"}' }).join('\n'), /must have required property 'name'/, 'error body checked');
  t.match(checker.check({ ...ok, path: '/v1/nothing', status: 200 }).join('\n'), /describes no GET \/v1\/nothing/, 'undocumented route');
  t.same(checker.check({ ...ok, path: '/v1/nothing', status: 404, text: '{"name":"NotFoundError","message":"m","status":404,"messageKey":"error.notFound"}' }), [], 'a 404 of an unknown path in the Error body');
  t.match(checker.check({ ...ok, method: 'DELETE', path: `/v1/cdn/media/${team}/delete/${media}`, status: 204, text: '' }).join('\n'), /status 204 is not documented/);
  t.match(
    checker.check({ method: 'GET', path: '/metrics', status: 200, contentType: 'application/json', text: '{}' }).join('\n'),
    /answered JSON, documented as text\/plain/,
  );
  t.ok(new AnswerChecker(document), 'a checker of its own compiles');
});
