import { createRequire } from 'node:module';
import t from 'tap';
import { launchChromiumOrSkip, pageOnOwnOrigin } from '../helpers/browser.ts';
import { startTestServer } from '../helpers/server.ts';
import { teamStorageState } from '../helpers/uploads.ts';

// tus-js-client in a real browser, on another origin: the CORS preflight admits the tus request
// headers and the answers expose Location, Upload-Offset and Media-Id, so a browser can create,
// interrupt, resume (HEAD) and finish an upload. Needs Chromium (Debian's `chromium`).

const tusBundle = createRequire(import.meta.url).resolve('tus-js-client/dist/tus.min.js');
const browser = await launchChromiumOrSkip(t, 'browser tus test');
const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 100_000 } });
t.test('a page on another origin uploads with tus-js-client, interrupted and resumed, and reads the Media-Id', async (t) => {
  const team = await server.createTeam('BrowserTus', 'enterprise');
  const { page } = await pageOnOwnOrigin(t, browser);
  await page.addScriptTag({ path: tusBundle });

  const size = 3 * 1024 * 1024;
  const outcome = await page.evaluate(async ({ endpoint, key, size }) => {
    const tus = (globalThis as unknown as { tus: { Upload: new (file: Blob, options: Record<string, unknown>) => any } }).tus;
    const bytes = new Uint8Array(size);
    bytes.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    for (let i = 8; i < size; i++) bytes[i] = (i * 31) & 0xff;
    const file = new Blob([bytes], { type: 'image/png' });
    let aborted = false;
    const offsets: number[] = [];
    return new Promise<{ ok: boolean; mediaId?: string | null; url?: string; offsets?: number[]; error?: string }>((resolve) => {
      const upload = new tus.Upload(file, {
        endpoint,
        headers: { Authorization: `Bearer ${key}` },
        metadata: { filename: 'from-browser.png', filetype: 'image/png' },
        chunkSize: 1024 * 1024,
        retryDelays: [],
        onChunkComplete: (_chunk: number, accepted: number) => {
          offsets.push(accepted);
          if (!aborted && accepted >= 1024 * 1024) {
            aborted = true;
            // Interrupted after the first PATCH, then started again: HEAD answers where to go on.
            void upload.abort().then(() => upload.start());
          }
        },
        onSuccess: ({ lastResponse }: { lastResponse: { getHeader(name: string): string | undefined } }) =>
          resolve({ ok: true, mediaId: lastResponse.getHeader('Media-Id') ?? null, url: upload.url, offsets }),
        onError: (error: Error) => resolve({ ok: false, error: String(error) }),
      });
      upload.start();
    });
  }, { endpoint: `${server.baseUrl}/v1/cdn/media/${team.teamId}/tus`, key: team.key, size });

  t.ok(outcome.ok, outcome.error ?? 'uploaded');
  t.match(outcome.mediaId, /^[0-9a-f-]{36}$/, 'Media-Id is readable from another origin');
  t.same(outcome.offsets, [1, 2, 3].map((mib) => mib * 1024 * 1024), 'each PATCH answer\'s Upload-Offset read by the page');
  t.match(outcome.url, new RegExp(`^${server.baseUrl}/v1/cdn/media/${team.teamId}/tus/`), 'Location resolved against the endpoint');
  t.match(await teamStorageState(server.databaseUrl, team.teamId), { files: 1, usedStorage: size, reservedStorage: 0, reservations: 0 });
});
