import t from 'tap';
import { launchChromiumOrSkip, pageOnOwnOrigin } from '../helpers/browser.ts';
import { startTestServer } from '../helpers/server.ts';
import { createUploadUrl } from '../helpers/upload-urls.ts';
import { teamStorageState } from '../helpers/uploads.ts';

// A page on another origin uploads a FormData to an upload URL without any key, the way a game
// client's in-game browser would (FiveM NUI). Needs Chromium (Debian's `chromium`).

const browser = await launchChromiumOrSkip(t, 'browser upload URL test');
const server = await startTestServer(t);
t.test('a page on another origin uploads a FormData to an upload URL, with no key; a second try is refused', async (t) => {
  const team = await server.createTeam('Browser');
  const { url } = await createUploadUrl(server, team.teamId, team.key, { tags: ['player:42'], contentTypes: ['image/*'] });
  const { page } = await pageOnOwnOrigin(t, browser, 'game client');
  const outcome = await page.evaluate(async (target) => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52, 1, 2, 3, 4, 5, 6, 7, 8]);
    const send = async () => {
      const form = new FormData();
      form.append('file', new Blob([png], { type: 'image/png' }), 'screenshot.png');
      try {
        const response = await fetch(target, { method: 'POST', body: form });
        return { ok: true, status: response.status, body: (await response.json()) as any };
      } catch (error) {
        return { ok: false, error: String(error) };
      }
    };
    // Runs in the page: its own origin.
    const { origin } = (globalThis as unknown as { location: { origin: string } }).location;
    return { origin, first: await send(), second: await send() };
  }, url);
  t.not(outcome.origin, new URL(server.baseUrl).origin, 'the page runs on another origin');
  t.ok(outcome.first.ok, `the browser let the page read the answer (${outcome.first.error ?? ''})`);
  t.equal(outcome.first.status, 201);
  t.match(outcome.first.body, { fileName: 'screenshot.png', tags: ['player:42'], contentType: 'image/png', size: 24 });
  t.equal(outcome.second.status, 410, 'the URL works once');
  t.equal(outcome.second.body.messageKey, 'error.media.uploadUrlUsed', 'the error body reaches the page');
  t.equal((await teamStorageState(server.databaseUrl, team.teamId)).files, 1);
});
