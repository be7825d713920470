import { randomBytes } from 'node:crypto';
import sharp from 'sharp';
import t from 'tap';
import { confirm, outboxToken, signUp, sql, teamOwnedBy } from '../helpers/accounts.ts';
import { expectError, startTestServer, type CreatedTeam, type TestServer } from '../helpers/server.ts';
import { closeS3Client, DRIVERS_OF_THIS_PASS, driverSettings, storedObjects, type Driver } from '../helpers/storage.ts';
import { uploadMultipart } from '../helpers/uploads.ts';
import { eventually } from '../helpers/wait.ts';

// Issue 35.2: resized images on request, on fs and s3: every output format and fit with exact
// sizes, every out-of-bounds parameter and a non-image refused with 400, a source of too many
// pixels refused, private files only through a link signed with the parameters, a cached variant
// served again without a second resize (the metric), 304 on its ETag, HEAD, cached variants
// removed with their file and their team, and the least recently used evicted past the budget.

t.teardown(closeS3Client);

const solid = (width: number, height: number) => sharp({ create: { width, height, channels: 3, background: { r: 40, g: 120, b: 200 } } });
/** Noise does not compress: a PNG of it is about width x height x 3 bytes, at any size. */
const noise = (side: number) => sharp(randomBytes(side * side * 3), { raw: { width: side, height: side, channels: 3 } }).png({ compressionLevel: 0 }).toBuffer();

type Counts = Record<'hit' | 'miss' | 'shared' | 'refused' | 'busy', number>;

async function transformCounts(server: TestServer): Promise<Counts> {
  const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
  const count = (result: string) => Number(new RegExp(`media_transforms_total\\{result="${result}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
  return { hit: count('hit'), miss: count('miss'), shared: count('shared'), refused: count('refused'), busy: count('busy') };
}

async function upload(server: TestServer, team: Pick<CreatedTeam, 'teamId' | 'key'>, content: Buffer, fileName: string, isPublic = true): Promise<string> {
  const response = await uploadMultipart(server, team.teamId, team.key, { content, fileName }, `public=${isPublic}`);
  if (response.status !== 201) throw new Error(`upload of ${fileName}: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body.id;
}

interface Fetched {
  status: number;
  headers: Headers;
  bytes: Buffer;
  body: any;
  format?: string;
  width?: number;
  height?: number;
}

async function get(url: string, init: RequestInit = {}): Promise<Fetched> {
  const response = await fetch(url, init);
  const bytes = Buffer.from(await response.arrayBuffer());
  const type = response.headers.get('content-type') ?? '';
  if (response.status === 200 && type.startsWith('image/') && bytes.length > 0) {
    const { format, width, height } = await sharp(bytes).metadata();
    return { status: 200, headers: response.headers, bytes, body: null, format, width, height };
  }
  return { status: response.status, headers: response.headers, bytes, body: type.startsWith('application/json') ? JSON.parse(bytes.toString()) : null };
}

async function linkOf(server: TestServer, team: CreatedTeam, mediaId: string, query = ''): Promise<string> {
  const answer = await server.media('GET', `/v1/cdn/media/${team.teamId}/${mediaId}${query}`, team.key);
  if (answer.status !== 200) throw new Error(`link of ${mediaId}: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body.url;
}

const transformObjects = async (driver: Driver, server: TestServer, teamId: string) => (await storedObjects(driver, server.dataDir, teamId, 'transforms')).objects;

for (const driver of DRIVERS_OF_THIS_PASS) {
  t.test(`${driver}: resized images`, async (t) => {
    const server = await startTestServer(t, { settings: { ...driverSettings(driver), THUMBNAIL_MAX_MEGAPIXELS: 1 } });
    const team = await server.createTeam('Gallery', 'enterprise');
    const ids = {
      png: await upload(server, team, await solid(800, 600).png().toBuffer(), 'shot.png'),
      // Stored 600x300 with EXIF orientation 6 (turn right): upright it is 300x600.
      jpeg: await upload(server, team, await solid(600, 300).jpeg().withMetadata({ orientation: 6 }).toBuffer(), 'phone.jpg'),
      gif: await upload(server, team, await solid(100, 80).gif().toBuffer(), 'icon.gif'),
      webp: await upload(server, team, await solid(400, 200).webp().toBuffer(), 'map.webp'),
      avif: await upload(server, team, await solid(640, 480).avif({ effort: 0 }).toBuffer(), 'photo.avif'),
      // 1.2 megapixels, above THUMBNAIL_MAX_MEGAPIXELS=1.
      large: await upload(server, team, await solid(1200, 1000).png().toBuffer(), 'large.png'),
      text: await upload(server, team, Buffer.from('not an image\n'), 'notes.txt'),
      private: await upload(server, team, await solid(800, 600).png().toBuffer(), 'secret.png', false),
    };
    const links = {} as Record<keyof typeof ids, string>;
    for (const [kind, id] of Object.entries(ids) as [keyof typeof ids, string][]) links[kind] = await linkOf(server, team, id);

    await t.test('every output format and fit, with exact sizes', async (t) => {
      const formats = { webp: 'webp', avif: 'heif', jpeg: 'jpeg', png: 'png' } as const;
      for (const [format, metadataFormat] of Object.entries(formats)) {
        const image = await get(`${links.png}?w=320&format=${format}`);
        t.match(image, { status: 200, format: metadataFormat, width: 320, height: 240 }, `${format}: 320x240`);
        t.equal(image.headers.get('content-type'), `image/${format}`);
      }
      const sizes: [keyof typeof ids, string, number, number][] = [
        ['png', 'w=320&h=320&fit=cover', 320, 320],
        ['png', 'w=320&h=320&fit=contain', 320, 320],
        ['png', 'w=320&h=320&fit=inside', 320, 240],
        ['png', 'w=320&h=320', 320, 240],
        ['png', 'h=480', 640, 480],
        ['png', 'h=480&fit=cover', 640, 480],
        // Never enlarged.
        ['png', 'w=1024', 800, 600],
        ['png', 'w=1024&h=1024&fit=cover', 800, 600],
        ['png', 'format=webp', 800, 600],
        // Upright by its EXIF orientation.
        ['jpeg', 'w=160', 160, 320],
        ['jpeg', 'w=256&h=256&fit=cover', 256, 256],
        ['webp', 'w=96&h=96&fit=contain&q=50', 96, 96],
        ['avif', 'w=160&q=95', 160, 120],
        ['gif', 'w=64', 64, 51],
      ];
      for (const [kind, query, width, height] of sizes) {
        t.match(await get(`${links[kind]}?${query}`), { status: 200, width, height }, `${kind} ?${query}: ${width}x${height}`);
      }
      t.match(await get(`${links.gif}?w=64`), { format: 'png' }, 'a GIF without format becomes a PNG');
      t.match(await get(`${links.jpeg}?w=64`), { format: 'jpeg' }, 'without format: the source\'s');
      const contained = await get(`${links.png}?w=320&h=320&fit=contain&format=png`);
      const { channels, hasAlpha } = await sharp(contained.bytes).metadata();
      t.ok(hasAlpha && channels === 4, 'contain letterboxes with transparency');
      const stripped = await sharp((await get(`${links.jpeg}?w=160&format=jpeg`)).bytes).metadata();
      t.equal(stripped.orientation, undefined, 'no EXIF left');
    });

    await t.test('out of bounds and non-images: 400 in the error body', async (t) => {
      const before = await transformCounts(server);
      const refused: [string, RegExp][] = [
        ['w=100', /^w must be one of 16, 32, 48/],
        ['w=0', /^w must be one of/],
        ['w=4096', /^w must be one of/],
        ['w=abc', /^w must be one of/],
        ['h=3000', /^h must be one of/],
        ['w=320&w=640', /^Give w once$/],
        ['fit=fill', /^fit must be one of cover, contain, inside$/],
        ['format=gif', /^format must be one of webp, avif, jpeg, png$/],
        ['q=42', /^q must be one of 50, 60, 70, 75, 80, 85, 90, 95$/],
        ['q=101', /^q must be one of/],
      ];
      for (const [query, message] of refused) {
        const answer = await get(`${links.png}?${query}`);
        expectError(t, answer, 400, 'error.badRequest');
        t.match(answer.body.message, message, query);
      }
      const text = await get(`${links.text}?w=320`);
      expectError(t, text, 400, 'error.badRequest');
      t.match(text.body.message, /^Only PNG, JPEG, WebP, GIF and AVIF images can be resized$/);
      t.equal((await get(links.text)).status, 200, 'the text file itself is served as before');
      const large = await get(`${links.large}?w=320`);
      expectError(t, large, 400, 'error.badRequest');
      t.match(large.body.message, /more than 1 megapixels/, 'a source of too many pixels is refused');
      expectError(t, await server.media('GET', `/v1/cdn/media/${team.teamId}/${ids.text}?w=320`, team.key), 400, 'error.badRequest');
      expectError(t, await server.media('GET', `/v1/cdn/media/${team.teamId}/${ids.png}?q=1`, team.key), 400, 'error.badRequest');
      t.equal((await transformCounts(server)).refused - before.refused, refused.length + 2, 'each refusal counted');
    });

    await t.test('cached: a second request is a hit, no second resize; ETag, 304, HEAD, CDN headers', async (t) => {
      const before = await transformCounts(server);
      const url = `${links.png}?w=256&format=webp&q=75`;
      const first = await get(url);
      t.match(first, { status: 200, width: 256, height: 192 });
      const afterFirst = await transformCounts(server);
      t.equal(afterFirst.miss - before.miss, 1, 'the first is a miss');
      // Another spelling of the same variant.
      const second = await get(`${links.png}?q=75&fit=inside&format=webp&w=256`);
      const afterSecond = await transformCounts(server);
      t.same([afterSecond.hit - afterFirst.hit, afterSecond.miss - afterFirst.miss], [1, 0], 'the second is a hit');
      t.same(second.bytes, first.bytes, 'the same bytes');
      const etag = first.headers.get('etag')!;
      t.match(etag, /^"[0-9a-f]+-256xauto-inside-q75\.webp"$/);
      t.not(etag, (await get(links.png, { method: 'HEAD' })).headers.get('etag'), 'not the file\'s ETag');
      t.equal(first.headers.get('cache-control'), 'public, max-age=31536000, immutable');
      t.match(first.headers.get('cache-tag'), /^media-[0-9a-f-]{36},team-[0-9a-f-]{36}$/, 'under the file\'s cache tag, which a purge names');
      t.equal(first.headers.get('content-length'), String(first.bytes.length));
      t.equal(first.headers.get('content-disposition'), 'inline; filename="shot.webp"; filename*=UTF-8\'\'shot.webp');
      t.equal(first.headers.get('x-content-type-options'), 'nosniff');
      t.equal(first.headers.get('vary'), null, 'no negotiation: the URL names the variant');
      const notModified = await fetch(url, { headers: { 'If-None-Match': etag } });
      t.equal(notModified.status, 304);
      t.equal(notModified.headers.get('etag'), etag);
      const head = await fetch(url, { method: 'HEAD' });
      t.equal(head.status, 200);
      t.equal(head.headers.get('content-length'), String(first.bytes.length));
      t.equal(head.headers.get('content-type'), 'image/webp');
      const after = await transformCounts(server);
      t.equal(after.miss - before.miss, 1, 'one resize in all');
      t.equal((await sql(server, 'select count(*)::int as n from media_transform where media_id = $1 and variant = $2', [ids.png, '256xauto-inside-q75.webp']))[0].n, 1);
      t.ok((await transformObjects(driver, server, team.teamId)).some((key) => key.endsWith(`${ids.png}/256xauto-inside-q75.webp`)), 'stored under transforms/');
      t.equal((await get(links.png)).headers.get('content-type'), 'image/png', 'the file without parameters is served as before');
    });

    await t.test('a private file: only through a link signed with the parameters', async (t) => {
      const bare = await linkOf(server, team, ids.private);
      const path = bare.split('?')[0]!;
      t.equal((await get(`${path}?w=320`)).status, 404, 'unsigned: 404 like an unknown file');
      const bareSignature = bare.split('?')[1]!;
      expectError(t, await get(`${path}?w=320&${bareSignature}`), 403, 'error.forbidden');
      t.equal((await get(`${path}?${bareSignature}&w=320`)).status, 403, 'the file\'s signature does not authorize a transform');

      const signed = await linkOf(server, team, ids.private, '?format=webp&w=320');
      t.match(signed, /\/media\/team\/[0-9a-f-]{36}\/[0-9a-f-]{36}\.png\?w=320&fit=inside&format=webp&expires=\d+&signature=[A-Za-z0-9_-]{43}$/, 'the canonical query, signed');
      const image = await get(signed);
      t.match(image, { status: 200, format: 'webp', width: 320, height: 240 });
      t.match(image.headers.get('cache-control'), /^private, max-age=\d+$/);
      const signature = signed.split('&expires=')[1]!;
      t.equal((await get(`${path}?fit=inside&w=320&expires=${signature}&format=webp`)).status, 200, 'any spelling of the signed parameters');
      t.equal((await get(`${path}?w=640&fit=inside&format=webp&expires=${signature}`)).status, 403, 'another size: 403');
      t.equal((await get(`${path}?w=320&fit=inside&expires=${signature}`)).status, 403, 'another format: 403');
      t.equal((await get(`${path}?expires=${signature}`)).status, 403, 'the transform\'s signature does not authorize the file');

      const publicLink = await linkOf(server, team, ids.png, '?w=320&h=320&fit=cover');
      t.equal(publicLink, `${links.png}?w=320&h=320&fit=cover`, 'a public file\'s link with the parameters, unsigned');
    });

    await t.test('deleting a file removes its cached variants; deleting its team removes the rest', async (t) => {
      const before = await transformObjects(driver, server, team.teamId);
      const ofPng = before.filter((key) => key.includes(ids.png));
      t.ok(ofPng.length >= 10, `the PNG has variants (${ofPng.length})`);
      t.equal((await server.media('DELETE', `/v1/cdn/media/${team.teamId}/delete/${ids.png}`, team.key)).status, 200);
      const after = await transformObjects(driver, server, team.teamId);
      t.same(after.filter((key) => key.includes(ids.png)), [], 'its variants are gone from storage');
      t.equal(after.length, before.length - ofPng.length, 'the others stay');
      t.equal((await sql(server, 'select count(*)::int as n from media_transform where media_id = $1', [ids.png]))[0].n, 0);
      t.equal((await get(`${links.png}?w=256&format=webp&q=75`)).status, 404);

      // Bulk delete goes the same way.
      await get(`${links.webp}?w=64`);
      t.equal((await server.media('POST', `/v1/cdn/media/${team.teamId}/bulk`, team.key, { body: { action: 'delete', ids: [ids.webp] } })).status, 200);
      t.same((await transformObjects(driver, server, team.teamId)).filter((key) => key.includes(ids.webp)), [], 'bulk: its variants are gone');

      const owner = await signUp(server);
      const doomed = await teamOwnedBy(server, owner, 'Doomed');
      const image = await upload(server, doomed, await solid(300, 200).png().toBuffer(), 'doomed.png');
      const link = await linkOf(server, doomed as CreatedTeam, image);
      for (const query of ['w=64', 'w=128&format=avif', 'h=96&format=jpeg']) t.equal((await get(`${link}?${query}`)).status, 200);
      t.equal((await transformObjects(driver, server, doomed.teamId)).length, 3, 'the doomed team has three variants');
      t.equal((await server.media('POST', `/v1/teams/${doomed.teamId}/deletion`, owner.token)).status, 202);
      t.match((await confirm(server, await outboxToken(server, owner.email, 'verification.TEAM_DELETE'))).body, { completed: true });
      t.ok(await eventually(async () => (await transformObjects(driver, server, doomed.teamId)).length === 0, 30_000), 'the team\'s variants are removed');
      t.equal((await sql(server, 'select count(*)::int as n from media_transform where team_id = $1', [doomed.teamId]))[0].n, 0);
    });
  });

  t.test(`${driver}: past the budget, the least recently used variants are evicted`, async (t) => {
    const server = await startTestServer(t, { settings: { ...driverSettings(driver), TRANSFORM_CACHE_MIB: 1 } });
    const team = await server.createTeam('Budget', 'enterprise');
    // Three variants of about 440 KB each: two fit in 1 MiB, three do not.
    const links: string[] = [];
    for (const name of ['a', 'b', 'c']) links.push(await linkOf(server, team, await upload(server, team, await noise(384), `${name}.png`)));
    const variant = (link: string) => `${link}?w=384&format=png`;
    const [a, b, c] = links.map(variant) as [string, string, string];
    t.equal((await get(a)).status, 200);
    t.equal((await get(b)).status, 200);
    t.equal((await transformObjects(driver, server, team.teamId)).length, 2, 'two variants fit the budget');
    const beforeA = await transformCounts(server);
    t.equal((await get(a)).status, 200);
    t.equal((await transformCounts(server)).hit - beforeA.hit, 1, 'a is used again: b is now the least recently used');
    t.equal((await get(c)).status, 200);
    const ofB = links[1]!.split('/').pop()!.replace('.png', '');
    t.ok(await eventually(async () => (await transformObjects(driver, server, team.teamId)).length === 2, 30_000), 'back to two variants');
    t.same((await transformObjects(driver, server, team.teamId)).filter((key) => key.includes(ofB)), [], 'b was evicted');
    const rows = await sql(server, 'select sum(size)::int as total, count(*)::int as n from media_transform');
    t.ok(rows[0].total <= 1024 * 1024 && rows[0].n === 2, `the rows are within the budget (${rows[0].total} bytes)`);
    const beforeB = await transformCounts(server);
    t.equal((await get(b)).status, 200);
    t.equal((await transformCounts(server)).miss - beforeB.miss, 1, 'b is resized again');
  });
}
