import type { Page } from 'playwright-core';
import t from 'tap';
import { launchChromiumOrSkip, pageOnOwnOrigin } from '../helpers/browser.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { pngLike, uploadMultipart } from '../helpers/uploads.ts';

// CORS in a real browser: a page on another localhost origin calls the API the way web panels and
// FiveM's NUI (screenshot-basic's requestScreenshotUpload) do. Needs Chromium (Debian's `chromium`).

const browser = await launchChromiumOrSkip(t, 'browser CORS test');

interface Outcome {
  ok: boolean;
  status?: number;
  body?: any;
  headers?: Record<string, string | null>;
  error?: string;
}

/** Everything a page does with the API, run inside the page; each step reports success or the browser's error. */
async function runInPage(page: Page, api: { baseUrl: string; teamId: string; key: string; fileUrl: string | null }) {
  return page.evaluate(async ({ baseUrl, teamId, key, fileUrl }) => {
    const auth = { Authorization: `Bearer ${key}` };
    const read = async (response: Response) => {
      const text = await response.text();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // not JSON
      }
      const headers: Record<string, string | null> = {};
      for (const name of ['x-request-id', 'ratelimit-remaining', 'content-type']) headers[name] = response.headers.get(name);
      return { ok: true, status: response.status, body, headers };
    };
    const attempt = async (run: () => Promise<Response>) => {
      try {
        return await read(await run());
      } catch (error) {
        return { ok: false, error: String(error) };
      }
    };
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52, 1, 2, 3, 4, 5, 6, 7, 8]);
    const form = new FormData();
    form.append('file', new Blob([png], { type: 'image/png' }), 'from-browser.png');
    const multipart = await attempt(() => fetch(`${baseUrl}/v1/cdn/media/${teamId}/upload/file?tags=browser`, { method: 'POST', headers: auth, body: form }));

    const dataUri = `data:image/png;base64,${btoa(String.fromCharCode(...png))}`;
    const json = await attempt(() => fetch(`${baseUrl}/v1/cdn/media/${teamId}/upload`, {
      method: 'POST',
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({ file: dataUri, fileName: 'data-uri.png', public: true }),
    }));

    // screenshot-basic's NUI: the field files[], a file named screenshot.jpg, the headers given in Lua, mode 'cors'.
    const jpeg = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 0x4a, 0x46, 0x49, 0x46, 0, 1, 9, 9, 9, 9]);
    const nui = new FormData();
    nui.append('files[]', new Blob([jpeg], { type: 'image/jpeg' }), 'screenshot.jpg');
    const fivem = await attempt(() => fetch(`${baseUrl}/v1/cdn/media/${teamId}/upload/file`, { method: 'POST', mode: 'cors', headers: auth, body: nui }));

    const list = await attempt(() => fetch(`${baseUrl}/v1/cdn/media/${teamId}`, { headers: { ...auth, pageSize: '10', pageNumber: '1' } }));
    const target = fileUrl ?? (multipart.ok ? (multipart as { body: { publicUrl: string } }).body.publicUrl : null);
    const file = target === null ? { ok: false, error: 'no file to fetch' } : await attempt(() => fetch(target));
    const fileBytes = file.ok && target ? Array.from(new Uint8Array(await (await fetch(target)).arrayBuffer())) : null;
    return { multipart, json, fivem, list, file, fileBytes, png: Array.from(png) };
  }, api);
}

t.test('CORS_ORIGINS=*: a page on another origin uploads, lists and fetches files', async (t) => {
  const server: TestServer = await startTestServer(t);
  const team = await server.createTeam('Alpha');
  const { page } = await pageOnOwnOrigin(t, browser);
  const results = await runInPage(page, { baseUrl: server.baseUrl, teamId: team.teamId, key: team.key, fileUrl: null });

  const multipart = results.multipart as Outcome;
  t.equal(multipart.status, 201, 'multipart fetch with FormData and Blob', { error: multipart.error });
  t.match(multipart.body, { publicUrl: String, tags: ['browser'] });
  t.match(multipart.headers?.['x-request-id'], /./, 'X-Request-Id is readable (exposed)');
  t.match(multipart.headers?.['ratelimit-remaining'], /^\d+$/, 'RateLimit-Remaining is readable (exposed)');
  t.equal((results.json as Outcome).status, 201, 'JSON data-URI upload', { error: (results.json as Outcome).error });
  t.equal((results.fivem as Outcome).status, 201, 'screenshot-basic shape: files[] with Authorization, through a preflight', { error: (results.fivem as Outcome).error });
  t.match((results.fivem as Outcome).body, { fileName: 'screenshot.jpg', contentType: 'image/jpeg' });
  const list = results.list as Outcome;
  t.equal(list.status, 200, 'the list, with the paging headers', { error: list.error });
  t.equal(list.body?.totalCount, 3);
  t.equal((results.file as Outcome).status, 200, 'fetch() of the public URL');
  t.same(results.fileBytes, results.png, 'serves the uploaded bytes');
});

t.test('CORS_ORIGINS naming the page: allowed; naming another origin: blocked', async (t) => {
  const { origin, page } = await pageOnOwnOrigin(t, browser);

  t.test('the page is listed', async (t) => {
    const server = await startTestServer(t, { settings: { CORS_ORIGINS: `https://cfx-nui-screenshot-basic,${origin}` } });
    const team = await server.createTeam('Alpha');
    const results = await runInPage(page, { baseUrl: server.baseUrl, teamId: team.teamId, key: team.key, fileUrl: null });
    for (const step of ['multipart', 'json', 'fivem', 'list', 'file'] as const) {
      t.ok((results[step] as Outcome).ok, `${step} succeeds`, { error: (results[step] as Outcome).error });
    }
    t.equal((results.multipart as Outcome).status, 201);
    t.same(results.fileBytes, results.png);
  });

  t.test('another origin is listed', async (t) => {
    const server = await startTestServer(t, { settings: { CORS_ORIGINS: 'http://localhost:1' } });
    const team = await server.createTeam('Alpha');
    const stored = await uploadMultipart(server, team.teamId, team.key, { content: pngLike(100), fileName: 'public.png', contentType: 'image/png' });
    t.equal(stored.status, 201);
    const results = await runInPage(page, { baseUrl: server.baseUrl, teamId: team.teamId, key: team.key, fileUrl: stored.body.publicUrl });
    for (const step of ['multipart', 'json', 'fivem', 'list', 'file'] as const) {
      const outcome = results[step] as Outcome;
      t.notOk(outcome.ok, `${step} is blocked by the browser`);
      t.match(outcome.error, /TypeError: Failed to fetch/);
    }
    const listed = await server.media('GET', `/v1/cdn/media/${team.teamId}`, team.key);
    t.equal(listed.body.totalCount, 1, 'the preflighted uploads never reached the service');
  });
});
