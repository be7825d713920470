import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { DeleteObjectCommand } from '@aws-sdk/client-s3';
import t from 'tap';
import type { Test } from 'tap';
import { GZIP_TAIL_BOUND, PREVIEW_READ_BOUND } from '../../src/domain/media/text-preview.ts';
import { storageKeyOf } from '../../src/uploads/targets/media-upload-target.ts';
import { startRecordingProxy, type RecordingProxy } from '../helpers/recording-proxy.ts';
import { expectError, startTestServer, type CreatedTeam, type TestServer } from '../helpers/server.ts';
import { closeS3Client, DRIVERS_OF_THIS_PASS, driverSettings, s3, s3Client, type Driver } from '../helpers/storage.ts';
import { MiB, pngLike, uploadMultipart } from '../helpers/uploads.ts';

t.teardown(closeS3Client);

const numbered = (count: number, text = (index: number) => `line ${index}`) => Array.from({ length: count }, (_, index) => text(index));

/** The S3 GETs of one object through the recording proxy, as [start, end] of their Range headers (null: no Range). */
function rangesAskedFor(proxy: RecordingProxy, teamId: string, mediaId: string, since: number): ([number, number] | null)[] {
  return proxy.requests
    .slice(since)
    .filter((request) => request.method === 'GET' && request.url.split('?')[0]!.endsWith(storageKeyOf(teamId, mediaId)))
    .map((request) => {
      const match = /^bytes=(\d+)-(\d+)$/.exec(request.headers['range'] ?? '');
      return match ? [Number(match[1]), Number(match[2])] : null;
    });
}

for (const driver of DRIVERS_OF_THIS_PASS) {
  t.test(`${driver} driver`, async (t) => {
    // On S3 every request passes a recording proxy, so the test sees the ranges the service asked for.
    const proxy = driver === 's3' ? await startRecordingProxy(s3.endpoint, { tls: false, headers: ['range'] }) : null;
    t.teardown(() => proxy?.close());
    const settings = { ...driverSettings(driver), RATE_LIMIT_POINTS: 100_000, ...(proxy && { S3_ENDPOINT: proxy.endpoint }) };
    const server = await startTestServer(t, { settings });
    const team = await server.createTeam('PreviewTeam');
    const other = await server.createTeam('OtherTeam');

    async function upload(content: Buffer, fileName: string, contentType = 'application/octet-stream', owner: CreatedTeam = team): Promise<{ id: string; contentType: string }> {
      const response = await uploadMultipart(server, owner.teamId, owner.key, { content, fileName, contentType });
      if (response.status !== 201) throw new Error(`upload failed: ${response.status} ${JSON.stringify(response.body)}`);
      return response.body;
    }
    const preview = (id: string, query = '', key = team.key, teamId = team.teamId) =>
      server.media('GET', `/v1/cdn/media/${teamId}/preview/${id}${query}`, key);

    /** The preview, checked 200; on S3, also that every read of the object was a range within `maxBytes` in all. */
    async function previewRead(t: Test, id: string, query: string, maxBytes: number) {
      const since = proxy?.requests.length ?? 0;
      const response = await preview(id, query);
      t.equal(response.status, 200, `200 for ${query}`);
      t.ok(response.body.bytesRead <= maxBytes, `bytesRead ${response.body.bytesRead} <= ${maxBytes}`);
      if (proxy) {
        const ranges = rangesAskedFor(proxy, team.teamId, id, since);
        t.ok(ranges.length > 0 && ranges.every((range) => range !== null), 'S3: every read is ranged');
        const asked = ranges.reduce((sum, range) => sum + range![1] - range![0] + 1, 0);
        t.ok(asked <= maxBytes, `S3: ${asked} bytes asked for, at most ${maxBytes}`);
        t.equal(asked, response.body.bytesRead, 'S3: bytesRead is what was asked for');
      }
      return response.body;
    }

    const logLines = numbered(200, (index) => `2026-11-23T10:00:${String(index % 60).padStart(2, '0')}Z INFO request ${index} done`);
    const log = await upload(Buffer.from(`${logLines.join('\n')}\n`), 'server.log', 'text/plain');

    t.test('the last lines (default) and the first lines of a .log', async (t) => {
      const last = await previewRead(t, log.id, '?lines=3', PREVIEW_READ_BOUND);
      t.same(last, {
        id: log.id, fileName: 'server.log', contentType: log.contentType, size: Buffer.byteLength(`${logLines.join('\n')}\n`), from: 'end',
        lines: logLines.slice(-3), cutLines: [], truncated: false, bytesRead: last.bytesRead, decompressedBytes: null,
      });
      t.match(log.contentType, /^text\/plain/);
      const first = await previewRead(t, log.id, '?lines=2&from=start', PREVIEW_READ_BOUND);
      t.same([first.lines, first.from, first.truncated], [logLines.slice(0, 2), 'start', false]);
      const defaults = await preview(log.id);
      t.equal(defaults.body.lines.length, 50, 'default: 50 lines');
      t.same(defaults.body.lines, logLines.slice(-50));
      t.equal(defaults.headers.get('cache-control'), 'no-store');
      const all = await preview(log.id, '?lines=1000&from=start');
      t.same(all.body.lines, logLines, 'more lines asked for than the file has: all of them');
    });

    t.test('a 5 MB log: only the ends are read, within the bound', async (t) => {
      const big = numbered(50_000, (index) => `${String(index).padStart(6, '0')} ${'x'.repeat(90)}`);
      const file = await upload(Buffer.from(`${big.join('\n')}\n`), 'big.log', 'text/plain');
      const last = await previewRead(t, file.id, '?lines=5', PREVIEW_READ_BOUND);
      t.same([last.lines, last.truncated], [big.slice(-5), false]);
      t.ok(last.bytesRead <= 16 * 1024, 'five lines: one small range');
      const first = await previewRead(t, file.id, '?lines=5&from=start', PREVIEW_READ_BOUND);
      t.same(first.lines, big.slice(0, 5));

      // 1000 lines of 97 bytes are within the bound; of lines 10 times longer they are not.
      const many = await previewRead(t, file.id, '?lines=1000', PREVIEW_READ_BOUND);
      t.same([many.lines, many.truncated], [big.slice(-1000), false]);
      const wide = numbered(5000, (index) => `${String(index).padStart(6, '0')} ${'y'.repeat(993)}`);
      const wideFile = await upload(Buffer.from(`${wide.join('\n')}\n`), 'wide.log', 'text/plain');
      const bounded = await previewRead(t, wideFile.id, '?lines=1000', PREVIEW_READ_BOUND);
      t.equal(bounded.bytesRead, PREVIEW_READ_BOUND, 'stopped at the bound');
      t.equal(bounded.truncated, true);
      // Lines of 1000 characters and a newline.
      const whole = Math.floor(PREVIEW_READ_BOUND / 1001);
      t.same(bounded.lines.slice(1), wide.slice(-whole), 'the whole lines within the bound, the newest last');
      t.same(bounded.cutLines, [0], 'the line the bound starts in is cut');
      t.ok(wide.at(-whole - 1)!.endsWith(bounded.lines[0]), 'and holds that line\'s end');
    });

    t.test('CRLF lines, no final newline, invalid UTF-8 replaced', async (t) => {
      const crlf = await upload(Buffer.from('first\r\nsecond\r\n\r\nlast without newline'), 'windows.txt', 'text/plain');
      t.same((await preview(crlf.id, '?lines=10')).body.lines, ['first', 'second', '', 'last without newline']);
      t.same((await preview(crlf.id, '?lines=2&from=start')).body.lines, ['first', 'second']);
      const invalid = Buffer.concat([Buffer.from('ok\nbad '), Buffer.from([0xff, 0xc3, 0x28, 0xe2, 0x82]), Buffer.from('\nend')]);
      const file = await upload(invalid, 'mixed.log', 'text/plain');
      for (const from of ['start', 'end']) {
        t.same((await preview(file.id, `?from=${from}`)).body.lines, ['ok', 'bad \ufffd\ufffd(\ufffd', 'end'], `from=${from}`);
      }
    });

    t.test('a multi-byte character cut by a range boundary decodes whole', async (t) => {
      // 3-byte characters; the 16 KiB ranges from either end fall inside characters.
      const lines = numbered(400, (index) => `${index} ${'€'.repeat(100 + (index % 7))}`);
      const file = await upload(Buffer.from(`${lines.join('\n')}\n`), 'euro.txt', 'text/plain');
      const last = await previewRead(t, file.id, '?lines=300', PREVIEW_READ_BOUND);
      t.same(last.lines, lines.slice(-300), 'from the end, over several ranges');
      const first = await previewRead(t, file.id, '?lines=300&from=start', PREVIEW_READ_BOUND);
      t.same(first.lines, lines.slice(0, 300), 'from the start, over several ranges');
    });

    t.test('a gzipped log, both ways', async (t) => {
      const lines = numbered(5000, (index) => `gz entry ${index}`);
      const content = gzipSync(Buffer.from(`${lines.join('\r\n')}\r\n`));
      const file = await upload(content, 'server.log.gz');
      t.equal(file.contentType, 'application/gzip');
      const first = await previewRead(t, file.id, '?lines=3&from=start', PREVIEW_READ_BOUND);
      t.same([first.lines, first.truncated], [lines.slice(0, 3), false]);
      const last = await previewRead(t, file.id, '?lines=3', GZIP_TAIL_BOUND);
      t.same([last.lines, last.truncated, last.decompressedBytes], [lines.slice(-3), false, Buffer.byteLength(`${lines.join('\r\n')}\r\n`)]);
    });

    t.test('a gzip bomb costs no more than the bound', async (t) => {
      // 64 gzip members of 16 MiB of text each: 1 GiB decompressed, about 1.5 MB stored.
      const member = gzipSync(Buffer.from('boom\n'.repeat((16 * MiB) / 5)));
      const file = await upload(Buffer.concat(Array.from({ length: 64 }, () => member)), 'bomb.log.gz');
      const last = await previewRead(t, file.id, '?lines=2', GZIP_TAIL_BOUND);
      t.same([last.decompressedBytes, last.truncated], [GZIP_TAIL_BOUND, true], 'from the end: 8 MiB decompressed, then truncated');
      t.equal(last.lines[0], 'boom');
      const first = await previewRead(t, file.id, '?lines=1000&from=start', PREVIEW_READ_BOUND);
      t.same([first.lines.length, first.truncated], [1000, false]);
      t.ok(first.decompressedBytes <= PREVIEW_READ_BOUND);
    });

    t.test('files that are not text are refused with 415', async (t) => {
      const png = await upload(pngLike(2000), 'picture.log', 'image/png');
      const refused = await preview(png.id);
      expectError(t, refused, 415, 'error.unsupportedMediaType');
      t.equal(refused.body.value, 'image/png');
      const tarball = await upload(gzipSync(Buffer.from('not a log')), 'backup.tar.gz');
      expectError(t, await preview(tarball.id), 415, 'error.unsupportedMediaType');
    });

    t.test('bad parameters answer 400, before the file is looked up', async (t) => {
      for (const query of ['?lines=0', '?lines=1001', '?lines=abc', '?lines=1.5', '?lines=-3']) {
        const response = await preview(log.id, query);
        expectError(t, response, 400, 'error.badRequest');
        t.equal(response.body.value, 'lines', query);
      }
      for (const query of ['?from=middle', '?from=END']) {
        const response = await preview('00000000-0000-4000-8000-000000000000', query);
        expectError(t, response, 400, 'error.badRequest');
        t.equal(response.body.value, 'from', query);
      }
    });

    t.test('another team\'s file, an unknown id, a missing object: 404; a key without team.media.view: 403', async (t) => {
      const theirs = await upload(Buffer.from('their secret log\n'), 'theirs.log', 'text/plain', other);
      expectError(t, await preview(theirs.id), 404, 'error.notFound');
      expectError(t, await preview(log.id, '', other.key, other.teamId), 404, 'error.notFound');
      expectError(t, await preview('00000000-0000-4000-8000-000000000000'), 404, 'error.notFound');
      expectError(t, await preview(log.id, '', other.key), 401, 'error.unauthorized');

      const member = await server.admin('POST', `/v1/admin/teams/${team.teamId}/members`, { name: 'uploader_only', permissions: ['team.media.upload'] });
      const key = await server.admin('POST', `/v1/admin/teams/${team.teamId}/api-keys`, { teamMemberId: member.body.id });
      expectError(t, await preview(log.id, '', key.body.key), 403, 'error.forbidden');

      const lost = await upload(Buffer.from('soon gone\n'), 'lost.log', 'text/plain');
      await removeObject(server, driver, storageKeyOf(team.teamId, lost.id));
      expectError(t, await preview(lost.id), 404, 'error.notFound');
    });
  });
}

/** Removes an object behind the service's back. */
async function removeObject(server: TestServer, driver: Driver, key: string): Promise<void> {
  if (driver === 'fs') await rm(join(server.dataDir, 'files', key));
  else await s3Client().send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: key }));
}
