import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { connectPg } from '../helpers/database.ts';
import { repo } from '../helpers/service-process.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { pngLike, teamStorageState, uploadMultipart } from '../helpers/uploads.ts';

// The client recipes of docs/clients.md, sent as those clients send them.

const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 10_000 } });
const team = await server.createTeam('Alpha');
const work = await mkdtemp(join(tmpdir(), 'media-clients-'));
t.teardown(() => rm(work, { recursive: true, force: true }));

/** `npm run cli -- ...` against the test server's database, with links on the test server's address. */
async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', DATABASE_URL: server.databaseUrl, DATA_DIR: work, PUBLIC_URL: server.baseUrl };
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ['src/cli/main.ts', ...args], { cwd: repo, env });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** One request written byte for byte on a socket, read up to its Content-Length. */
function rawRequest(server: TestServer, head: string, body: Buffer): Promise<RawAnswer> {
  const { port } = new URL(server.baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    const chunks: Buffer[] = [];
    const finish = () => {
      const all = Buffer.concat(chunks);
      const split = all.indexOf('\r\n\r\n');
      if (split < 0) return false;
      const [statusLine, ...lines] = all.subarray(0, split).toString('latin1').split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) headers[line.slice(0, line.indexOf(':')).toLowerCase()] = line.slice(line.indexOf(':') + 1).trim();
      const length = Number(headers['content-length'] ?? 0);
      if (all.length < split + 4 + length) return false;
      socket.destroy();
      resolve({ status: Number(statusLine!.split(' ')[1]), headers, body: all.subarray(split + 4, split + 4 + length) });
      return true;
    };
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      finish();
    });
    socket.on('error', reject);
    socket.on('close', () => {
      if (!finish()) reject(new Error(`connection closed before a whole answer: ${Buffer.concat(chunks).toString('latin1').slice(0, 300)}`));
    });
    socket.write(Buffer.concat([Buffer.from(head, 'latin1'), body]));
  });
}

/** ShareX's custom uploader syntax for what we use: `{json:a.b}` takes a field of the JSON answer. */
function sharexSyntax(template: string, answer: string): string {
  return template.replace(/\{json:([A-Za-z0-9_.]+)\}/g, (_all, path: string) => {
    let value: any = JSON.parse(answer);
    for (const key of path.split('.')) value = value?.[key];
    return value === undefined || value === null ? '' : String(value);
  });
}

/** What ShareX (UploadersLib, RequestHelpers) sends for a MultipartFormData custom uploader. */
function sharexRequest(sxcu: any, fileName: string, content: Buffer, mimeType: string): { head: string; body: Buffer } {
  const url = new URL(sxcu.RequestURL);
  for (const [name, value] of Object.entries(sxcu.Parameters ?? {})) url.searchParams.set(name, String(value));
  // CreateBoundary(): 20 dashes and the current ticks in hex.
  const boundary = `${'-'.repeat(20)}${(BigInt(Date.now()) * 10_000n + 621_355_968_000_000_000n).toString(16)}`;
  const body = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${sxcu.FileFormName}"; filename="${fileName}"\r\nContent-Type: ${mimeType}\r\n\r\n`),
    content,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  const headers: Record<string, string> = {
    Host: url.host,
    'User-Agent': 'ShareX/17.1.0',
    ...sxcu.Headers,
    'Content-Type': `multipart/form-data; boundary=${boundary}`,
    'Content-Length': String(body.length),
  };
  const head = `${sxcu.RequestMethod} ${url.pathname}${url.search} HTTP/1.1\r\n${Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n`;
  return { head, body };
}

t.test('ShareX: the cli writes a .sxcu; what ShareX sends for it lands, and its URL serves the bytes', async (t) => {
  const out = join(work, 'team.sxcu');
  const made = await cli(['sharex', '--team', team.teamId, '--create-key', '--folder', 'screenshots/pc', '--tags', 'sharex,pc:desk', '--out', out]);
  t.equal(made.code, 0, 'the cli succeeds', { stderr: made.stderr });
  const printed = JSON.parse(made.stdout);
  t.equal(printed.file, out);
  t.match(printed.createdKeyId, /^[0-9a-f-]{36}$/, 'names the key it created');
  const sxcu = JSON.parse(await readFile(out, 'utf8'));
  t.match(sxcu, {
    RequestMethod: 'POST',
    RequestURL: `${server.baseUrl}/v1/cdn/media/${team.teamId}/upload/file`,
    Parameters: { public: 'true', folder: 'screenshots/pc', tags: 'sharex,pc:desk' },
    Headers: { Authorization: /^Bearer tws_/ },
    Body: 'MultipartFormData',
    FileFormName: 'file',
    URL: '{json:publicUrl}',
    DeletionURL: '{json:deletionUrl}',
    ErrorMessage: '{json:message}',
  });
  t.equal(sxcu.Parameters.deletionUrl, 'true', 'asks for a deletion link');

  const content = pngLike(4096);
  const { head, body } = sharexRequest(sxcu, 'firefox_Xk2mP9qLw1.png', content, 'image/png');
  const answer = await rawRequest(server, head, body);
  t.equal(answer.status, 201, 'the upload lands', { body: answer.body.toString() });
  const media = JSON.parse(answer.body.toString());
  t.match(media, { fileName: 'firefox_Xk2mP9qLw1.png', tags: ['sharex', 'pc:desk'], public: true });
  const link = sharexSyntax(sxcu.URL, answer.body.toString());
  t.equal(link, media.publicUrl, 'the URL ShareX extracts is the public link');
  const served = await fetch(link);
  t.equal(served.status, 200);
  t.same(Buffer.from(await served.arrayBuffer()), content, 'and it serves the bytes');

  const wrongKey = { ...sxcu, Headers: { Authorization: 'Bearer tws_not_a_key' } };
  const refused = sharexRequest(wrongKey, 'x.png', content, 'image/png');
  const error = await rawRequest(server, refused.head, refused.body);
  t.equal(error.status, 401);
  t.match(sharexSyntax(sxcu.ErrorMessage, error.body.toString()), /\w/, 'ErrorMessage extracts the error message');
});

t.test('ShareX cli: --key, and what it refuses', async (t) => {
  const out = join(work, 'given.sxcu');
  const made = await cli(['sharex', '--team', team.teamId, '--key', team.key, '--out', out]);
  t.equal(made.code, 0, { stderr: made.stderr });
  const sxcu = JSON.parse(await readFile(out, 'utf8'));
  t.same(sxcu.Headers, { Authorization: `Bearer ${team.key}` });
  t.same(sxcu.Parameters, { public: 'true', deletionUrl: 'true' });
  t.equal(JSON.parse(made.stdout).createdKeyId, undefined, 'no key created');

  const other = await server.createTeam('Bravo');
  const refusals: [string, string[]][] = [
    ['neither --key nor --create-key', ['sharex', '--team', team.teamId]],
    ['both', ['sharex', '--team', team.teamId, '--key', team.key, '--create-key']],
    ["another team's key", ['sharex', '--team', team.teamId, '--key', other.key]],
    ['an unknown key', ['sharex', '--team', team.teamId, '--key', 'tws_nope']],
    ['an unknown team', ['sharex', '--team', '00000000-0000-4000-8000-000000000000', '--create-key']],
    ['a bad tag', ['sharex', '--team', team.teamId, '--create-key', '--tags', 'no spaces']],
  ];
  for (const [label, args] of refusals) {
    const file = join(work, 'refused.sxcu');
    const result = await cli([...args, '--out', file]);
    t.equal(result.code, 1, `${label}: exit 1`);
    t.match(JSON.parse(result.stderr.slice(result.stderr.indexOf('{'))), { status: Number, messageKey: String }, `${label}: the error body`);
    t.notOk(existsSync(file), `${label}: no file written`);
  }
  const db = await connectPg(server.databaseUrl);
  t.teardown(() => db.end());
  const keys = await db.query<{ count: string }>('select count(*) from api_key where team_id = $1', [team.teamId]);
  t.equal(Number(keys.rows[0]!.count), 2, 'the refused runs made no key (the owner key and the first sharex key only)');
});

t.test('FiveM screenshot-basic, server side: requestClientScreenshot data URI posted as JSON with public: true', async (t) => {
  const jpeg = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), pngLike(2000).subarray(4)]);
  // PerformHttpRequest(url, cb, 'POST', json.encode({ file = data, fileName = ..., public = true, tags = {...} }), headers)
  const response = await fetch(`${server.baseUrl}/v1/cdn/media/${team.teamId}/upload`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${team.key}` },
    body: JSON.stringify({
      file: `data:image/jpeg;base64,${jpeg.toString('base64')}`,
      fileName: 'player-12.jpg',
      public: true,
      folder: 'fivem/screenshots',
      tags: ['fivem', 'player:12'],
    }),
  });
  t.equal(response.status, 201);
  const media = (await response.json()) as { publicUrl: string };
  t.match(media, { fileName: 'player-12.jpg', contentType: 'image/jpeg', public: true, publicUrl: String });
  const served = await fetch(media.publicUrl);
  t.same(Buffer.from(await served.arrayBuffer()), jpeg, 'the public link serves the screenshot');
});

t.test('curl and Flameshot recipes', { skip: existsSync('/usr/bin/curl') ? false : 'curl is not installed' }, async (t) => {
  const shot = join(work, 'shot.png');
  const content = pngLike(1500);
  await writeFile(shot, content);
  const env = { ...process.env, MEDIA_URL: server.baseUrl, TEAM: team.teamId, KEY: team.key };
  const run = (script: string) => promisify(execFile)('sh', ['-c', script], { cwd: work, env });
  // The commands of docs/clients.md, as written there.
  const file = await run(`curl -sS -H "Authorization: Bearer $KEY" -F "file=@shot.png" "$MEDIA_URL/v1/cdn/media/$TEAM/upload/file?tags=curl"`);
  const uploaded = JSON.parse(file.stdout);
  t.match(uploaded, { fileName: 'shot.png', tags: ['curl'], publicUrl: String });
  t.same(Buffer.from(await (await fetch(uploaded.publicUrl)).arrayBuffer()), content);
  // Flameshot: `flameshot gui --raw` writes the PNG to stdout; cat stands in for it.
  const piped = await run(
    `cat shot.png | curl -sS -H "Authorization: Bearer $KEY" -F "file=@-;filename=flameshot.png;type=image/png" "$MEDIA_URL/v1/cdn/media/$TEAM/upload/file?folder=flameshot"`,
  );
  const fromStdin = JSON.parse(piped.stdout);
  t.match(fromStdin, { fileName: 'flameshot.png', contentType: 'image/png', publicUrl: String });
  t.same(Buffer.from(await (await fetch(fromStdin.publicUrl)).arrayBuffer()), content);
});

/** A deletion link used as a browser does: GET the page, then submit its form (a POST to the same address, no body). */
function browserRequest(method: 'GET' | 'POST', link: string): Promise<Response> {
  return fetch(link, {
    method,
    headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', ...(method === 'POST' && { 'content-type': 'application/x-www-form-urlencoded' }) },
    ...(method === 'POST' && { body: '' }),
  });
}

t.test('ShareX DeletionURL: GET shows a page and deletes nothing; its form deletes the file once and frees its storage', async (t) => {
  const out = join(work, 'deleting.sxcu');
  t.equal((await cli(['sharex', '--team', team.teamId, '--key', team.key, '--out', out])).code, 0);
  const sxcu = JSON.parse(await readFile(out, 'utf8'));
  const content = pngLike(50_000);
  const { head, body } = sharexRequest(sxcu, 'R&D <draft>.png', content, 'image/png');
  const answer = await rawRequest(server, head, body);
  t.equal(answer.status, 201, answer.body.toString());
  const media = JSON.parse(answer.body.toString());
  const link = sharexSyntax(sxcu.DeletionURL, answer.body.toString());
  t.match(link, new RegExp(`^${server.baseUrl}/v1/cdn/media/${team.teamId}/deletion-links/${media.id}\\?signature=[\\w-]{43}$`), 'ShareX extracts the deletion link');
  const before = await teamStorageState(server.databaseUrl, team.teamId);

  for (let i = 0; i < 2; i++) {
    const page = await browserRequest('GET', link);
    t.equal(page.status, 200, 'GET: the confirmation page');
    t.match(page.headers.get('content-type'), /^text\/html/);
    t.match(page.headers.get('content-security-policy'), /default-src 'none'/, 'a strict CSP');
    t.notMatch(page.headers.get('content-security-policy'), /script-src/, 'no script at all');
    t.equal(page.headers.get('referrer-policy'), 'no-referrer');
    const html = await page.text();
    t.match(html, /<form method="post"><button type="submit">Delete<\/button><\/form>/, 'a button that posts to the same link');
    t.match(html, /R&#38;D &#60;draft&#62;\.png/, 'the file name, escaped');
    t.notMatch(html, /<script/);
  }
  t.same(await teamStorageState(server.databaseUrl, team.teamId), before, 'opening the link twice deleted nothing');
  t.equal((await fetch(media.publicUrl)).status, 200, 'the file is still served');

  const confirmed = await browserRequest('POST', link);
  t.equal(confirmed.status, 200, 'the form deletes');
  t.match(confirmed.headers.get('content-type'), /^text\/html/, 'and answers a page');
  t.match(await confirmed.text(), /File deleted/);
  const after = await teamStorageState(server.databaseUrl, team.teamId);
  t.equal(after.files, before.files - 1, 'the file is gone');
  t.equal(after.usedStorage, before.usedStorage - content.length, 'its storage is freed');
  t.equal((await fetch(media.publicUrl)).status, 404, 'its link no longer serves it');

  for (const method of ['POST', 'GET', 'DELETE'] as const) {
    const again = await fetch(link, { method });
    t.equal(again.status, 410, `${method} after the deletion: 410`);
    t.match(await again.json(), { name: 'GoneError', status: 410, messageKey: 'error.media.deletionLinkGone', message: String }, 'in the error body');
  }
});

t.test('deletionUrl on the upload routes: only when asked; DELETE deletes that one file once; an altered link or another file\'s is refused', async (t) => {
  const other = await server.createTeam('DeletionOther');
  const upload = (query: string) => uploadMultipart(server, team.teamId, team.key, { fileName: 'shot.png', contentType: 'image/png', content: pngLike(10_000) }, query);
  const plain = await upload('');
  t.equal(plain.status, 201);
  t.notOk('deletionUrl' in plain.body, 'not asked: no deletion link');
  t.notOk('deletionUrl' in (await upload('deletionUrl=false')).body, 'deletionUrl=false: none');
  const invalid = await upload('deletionUrl=yes');
  t.equal(invalid.status, 400);
  t.match(invalid.body, { messageKey: 'error.badRequest', value: 'deletionUrl' });

  const first = await upload('deletionUrl=true');
  const second = await upload('deletionUrl=true');
  t.match(first.body.deletionUrl, /\/deletion-links\/.+\?signature=/, 'asked: the answer carries the link');
  const json = await server.media('POST', `/v1/cdn/media/${team.teamId}/upload?deletionUrl=true`, team.key,
    { body: { file: pngLike(300).toString('base64'), fileName: 'json.png' } });
  t.equal(json.status, 201);
  t.match(json.body.deletionUrl, new RegExp(`/deletion-links/${json.body.id}\\?signature=`), 'the JSON route too');
  const otherFile = await uploadMultipart(server, other.teamId, other.key, { fileName: 'o.png', contentType: 'image/png', content: pngLike(1000) }, 'deletionUrl=true');

  const firstLink = new URL(first.body.deletionUrl);
  const signature = firstLink.searchParams.get('signature')!;
  const refusedLinks: Array<[string, string]> = [
    ['the signature altered', `${firstLink.origin}${firstLink.pathname}?signature=${signature.slice(0, -1)}${signature.endsWith('A') ? 'B' : 'A'}`],
    ['no signature', `${firstLink.origin}${firstLink.pathname}`],
    ['its signature on another file', `${firstLink.origin}${firstLink.pathname.replace(first.body.id, second.body.id)}?signature=${signature}`],
    ['its signature on another team\'s file', `${firstLink.origin}/v1/cdn/media/${other.teamId}/deletion-links/${otherFile.body.id}?signature=${signature}`],
    ['another file\'s signature on it', `${firstLink.origin}${firstLink.pathname}?signature=${new URL(second.body.deletionUrl).searchParams.get('signature')}`],
  ];
  const before = await teamStorageState(server.databaseUrl, team.teamId);
  for (const [what, link] of refusedLinks) {
    for (const method of ['DELETE', 'POST', 'GET']) {
      const refused = await fetch(link, { method });
      t.equal(refused.status, 403, `${what}, ${method}: 403`);
      t.match(await refused.json(), { name: 'ForbiddenError', messageKey: 'error.media.deletionLinkInvalid' });
    }
  }
  // A media id that is no id matches no route, as everywhere else (a mistyped path).
  for (const method of ['DELETE', 'POST', 'GET']) {
    const refused = await fetch(`${firstLink.origin}/v1/cdn/media/${team.teamId}/deletion-links/nope?signature=${signature}`, { method });
    t.equal(refused.status, 404, `not an id, ${method}: 404`);
    t.match(await refused.json(), { name: 'NotFoundError', messageKey: 'error.notFound', message: /no such route/ });
  }
  t.same(await teamStorageState(server.databaseUrl, team.teamId), before, 'nothing deleted by a refused link');
  t.equal((await teamStorageState(server.databaseUrl, other.teamId)).files, 1, 'nor in the other team');

  const deleted = await fetch(first.body.deletionUrl, { method: 'DELETE' });
  t.equal(deleted.status, 200);
  const deletion = await deleted.json();
  t.same(deletion, { deleted: first.body.id, usedTeamStorage: before.usedStorage - 10_000 }, 'the deletion answer, with the freed storage');
  const after = await teamStorageState(server.databaseUrl, team.teamId);
  t.equal(after.usedStorage, before.usedStorage - 10_000, 'usedTeamStorage drops by the file');
  t.equal(after.files, before.files - 1, 'that one file');
  t.equal((await server.media('GET', `/v1/cdn/media/${team.teamId}/${second.body.id}`, team.key)).status, 200, 'the other file stays');
  const again = await fetch(first.body.deletionUrl, { method: 'DELETE' });
  t.equal(again.status, 410, 'a second use is refused');
  t.match(await again.json(), { messageKey: 'error.media.deletionLinkGone' });

  // A file deleted another way: its link stops working too.
  t.equal((await server.media('DELETE', `/v1/cdn/media/${team.teamId}/delete/${json.body.id}`, team.key)).status, 200);
  t.equal((await fetch(json.body.deletionUrl, { method: 'DELETE' })).status, 410, 'the link of a file already deleted: 410');
  const programmatic = await fetch(second.body.deletionUrl, { method: 'POST' });
  t.equal(programmatic.status, 200, 'POST without Accept: text/html');
  t.match(await programmatic.json(), { deleted: second.body.id }, 'answers the JSON of DELETE');
});
