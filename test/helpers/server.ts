import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import { Application } from '../../src/app.ts';
import { loadConfig } from '../../src/config/config.ts';
import type { SettingName } from '../../src/config/settings.ts';
import { createLogger, type Logger } from '../../src/logging/logger.ts';
import type { TxtResolver } from '../../src/domain/portal/txt-resolver.ts';
import { createTestDatabase } from './database.ts';
import { assertAnswer } from './openapi-answers.ts';
import { TEST_PLACEMENT } from './service-process.ts';

export const TEST_AUTH_SECRET = 'test-operator-secret-0123456789';
/**
 * scrypt at N=2^12 (4 MiB, a few ms) instead of the default 2^17 (128 MiB, ~0.5 s of CPU): the suite signs up and in
 * hundreds of times. test/unit/password-hash.test.ts covers the default cost.
 */
export const TEST_PASSWORD_HASH_COST = 12;

interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export interface TestServer {
  app: Application;
  baseUrl: string;
  databaseUrl: string;
  dataDir: string;
  request<T = any>(method: string, path: string, options?: { body?: unknown; headers?: Record<string, string> }): Promise<ApiResponse<T>>;
  /** An operator route call with the right authSecret. */
  admin<T = any>(method: string, path: string, body?: unknown): Promise<ApiResponse<T>>;
  /** A media route call with `Authorization: Bearer <key>`. */
  media<T = any>(method: string, path: string, key: string, options?: { body?: unknown; headers?: Record<string, string> }): Promise<ApiResponse<T>>;
  createTeam(name?: string, plan?: string): Promise<CreatedTeam>;
}

export interface CreatedTeam {
  teamId: string;
  ownerId: string;
  key: string;
  keyId: string;
}

export interface StartOptions {
  settings?: Partial<Record<SettingName, unknown>>;
  /** Reuse a database (several instances sharing one); a fresh one otherwise. */
  databaseUrl?: string;
  /** Reuse another instance's DATA_DIR, so fs-driver instances share their files; a fresh one otherwise. */
  dataDir?: string;
  /** The service's logger (to read what it logs); a silent one otherwise. */
  logger?: Logger;
  /** The portal domains' TXT lookups (a stub); the system's resolvers otherwise. */
  txtResolver?: TxtResolver;
}

/** Starts the whole service in this process on a free port, against a fresh database; stopped at teardown. */
export async function startTestServer(t: Teardown, options: StartOptions = {}): Promise<TestServer> {
  const databaseUrl = options.databaseUrl ?? (await createTestDatabase(t));
  const ownsDataDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'media-test-')));
  const config = loadConfig({
    env: {},
    overrides: {
      PORT: 0,
      DATABASE_URL: databaseUrl,
      DATA_DIR: dataDir,
      AUTH_SECRET: TEST_AUTH_SECRET,
      PASSWORD_HASH_COST: TEST_PASSWORD_HASH_COST,
      LOG_LEVEL: 'silent',
      DATABASE_FILE_MAX_BYTES: Number(TEST_PLACEMENT.DATABASE_FILE_MAX_BYTES),
      ...options.settings,
    },
  });
  const app = new Application(config, options.logger ?? createLogger(config.logLevel), { txtResolver: options.txtResolver });
  await app.start();
  t.teardown(async () => {
    await app.stop();
    if (ownsDataDir) await rm(dataDir, { recursive: true, force: true });
  });
  const baseUrl = `http://127.0.0.1:${app.port}`;

  const request: TestServer['request'] = async (method, path, requestOptions = {}) => {
    const headers: Record<string, string> = { ...requestOptions.headers };
    let body: string | undefined;
    if (requestOptions.body !== undefined) {
      body = typeof requestOptions.body === 'string' ? requestOptions.body : JSON.stringify(requestOptions.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await fetch(`${baseUrl}${path}`, { method, headers, body });
    const text = await response.text();
    // Every answer passing through here must match the OpenAPI document (test/helpers/openapi-answers.ts).
    assertAnswer({ method, path, status: response.status, contentType: response.headers.get('content-type'), text });
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON: leave the text
    }
    return { status: response.status, headers: response.headers, body: parsed as any };
  };

  const server: TestServer = {
    app,
    baseUrl,
    databaseUrl,
    dataDir,
    request,
    admin: (method, path, body) => request(method, path, { body, headers: { authSecret: TEST_AUTH_SECRET } }),
    media: (method, path, key, requestOptions = {}) =>
      request(method, path, { ...requestOptions, headers: { authorization: `Bearer ${key}`, ...requestOptions.headers } }),
    async createTeam(name = 'Alpha', plan?: string) {
      const response = await server.admin('POST', '/v1/admin/teams', plan ? { name, plan } : { name });
      if (response.status !== 201) throw new Error(`team creation failed: ${JSON.stringify(response.body)}`);
      return {
        teamId: response.body.team.id,
        ownerId: response.body.owner.id,
        key: response.body.apiKey.key,
        keyId: response.body.apiKey.id,
      };
    },
  };
  return server;
}

/** Asserts the spec's error body (section 7) and returns it. */
export function expectError(
  t: Test,
  response: Pick<ApiResponse, 'status' | 'body'>,
  status: number,
  messageKey: string,
): void {
  t.equal(response.status, status, `status ${status}`);
  t.match(response.body, { name: String, message: String, status, messageKey }, `error body ${messageKey}`);
}
