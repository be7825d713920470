import { randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { readdir, stat, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Test } from 'tap';
import { hashContent, loadXxhash } from '../../src/uploads/hashing/content-hash.ts';
import { connectPg } from '../helpers/database.ts';
import { subscribeToUploads } from '../helpers/outbox.ts';
import { expectError, startTestServer, type TestServer } from '../helpers/server.ts';
import { closeS3Client, driverSettings, settledObjects, type Driver } from '../helpers/storage.ts';
import { heldUpload, KiB, MiB, multipartBody, pngLike, send, sendChunked, teamStorageState, uploadJson, uploadMultipart, uploadPath } from '../helpers/uploads.ts';
import { eventually } from '../helpers/wait.ts';


async function readBack(server: TestServer, id: string): Promise<Buffer> {
  const client = await connectPg(server.databaseUrl);
  try {
    const { rows } = await client.query<{ storage_key: string }>('select storage_key from media_file where id = $1', [id]);
    const stream = await server.app.services.store.read(rows[0]!.storage_key);
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    return Buffer.concat(chunks);
  } finally {
    await client.end();
  }
}

async function expectNothingLeft(t: Test, server: TestServer, driver: Driver, teamId: string, before: { files: number; usedStorage: number }) {
  const state = await teamStorageState(server.databaseUrl, teamId);
  t.equal(state.files, before.files, 'no media row');
  t.equal(state.usedStorage, before.usedStorage, 'no storage counted');
  t.equal(state.reservedStorage, 0, 'no storage reserved');
  t.equal(state.reservations, 0, 'no reservation row');
  const stored = await settledObjects(driver, server.dataDir, teamId, before.files);
  t.equal(stored.objects.length, before.files, 'no object stored');
  t.same(stored.inProgress, [], 'no temp file or multipart upload left');
}

/** The upload routes end to end against one storage driver; one service serves the whole file. */
export async function uploadSuite(t: Test, driver: Driver): Promise<void> {
  {
    t.teardown(closeS3Client);
    const xxhash = await loadXxhash();
    const server = await startTestServer(t, { settings: { ...driverSettings(driver), RATE_LIMIT_POINTS: 100_000 } });
    const enterprise = await server.createTeam('Fleet', 'enterprise');

    t.test(`${driver}: multipart and JSON uploads store exactly the bytes sent`, async (t) => {
      const sizes = [1, 300 * KiB, 9 * MiB];
      let used = 0;
      for (const size of sizes) {
        const content = pngLike(size);
        const response = await uploadMultipart(server, enterprise.teamId, enterprise.key, { fileName: `shot-${size}.png`, contentType: 'image/png', content });
        t.equal(response.status, 201, `multipart ${size} bytes`);
        used += size;
        t.match(response.body, {
          id: String,
          path: new RegExp(`^media/team/${enterprise.teamId}/[0-9a-f-]{36}\\.png$`),
          publicUrl: String,
          usedTeamStorage: used,
          folderId: null,
          tags: [],
          fileName: `shot-${size}.png`,
          size,
          hash: hashContent(xxhash, content),
        });
        t.ok((await readBack(server, response.body.id)).equals(content), `multipart ${size} bytes read back intact`);

        const json = await uploadJson(server, enterprise.teamId, enterprise.key, { file: `data:image/png;base64,${content.toString('base64')}`, fileName: `j-${size}.png` });
        t.equal(json.status, 201, `JSON ${size} bytes`);
        used += size;
        t.equal(json.body.usedTeamStorage, used);
        t.equal(json.body.hash, hashContent(xxhash, content));
        t.ok((await readBack(server, json.body.id)).equals(content), `JSON ${size} bytes read back intact`);
      }
      const state = await teamStorageState(server.databaseUrl, enterprise.teamId);
      t.equal(state.usedStorage, state.sumOfSizes, 'usedTeamStorage equals the sum of the stored files');
    });

    t.test(`${driver}: one file over 100 MB through multipart`, async (t) => {
      const size = 101 * MiB + 7;
      const content = pngLike(size);
      const before = (await teamStorageState(server.databaseUrl, enterprise.teamId)).usedStorage;
      const response = await uploadMultipart(server, enterprise.teamId, enterprise.key, { fileName: 'big.png', content });
      t.equal(response.status, 201);
      t.equal(response.body.size, size);
      t.equal(response.body.usedTeamStorage, before + size);
      t.equal(response.body.hash, hashContent(xxhash, content));
      t.ok((await readBack(server, response.body.id)).equals(content), 'read back intact');
    });

    t.test(`${driver}: JSON bodies: bare base64, fields in any order, fileName after file`, async (t) => {
      const content = Buffer.from('hello from a game server log\n');
      const body = `{"file":"${content.toString('base64')}","tags":["server:eu-1"],"fileName":"server.log"}`;
      const response = await uploadJson(server, enterprise.teamId, enterprise.key, body);
      t.equal(response.status, 201);
      t.match(response.body, { fileName: 'server.log', tags: ['server:eu-1'], publicUrl: null, size: content.length });
      t.ok((await readBack(server, response.body.id)).equals(content));
    });

    t.test(`${driver}: visibility follows spec 3.1`, async (t) => {
      const team = await server.createTeam('Visibility', 'enterprise');
      const file = { content: pngLike(100), fileName: 'v.png' };
      const multipartDefault = await uploadMultipart(server, team.teamId, team.key, file);
      t.equal(multipartDefault.body.public, true, 'multipart without public is public');
      t.type(multipartDefault.body.publicUrl, 'string');
      const jsonDefault = await uploadJson(server, team.teamId, team.key, { file: file.content.toString('base64'), fileName: 'v.png' });
      t.equal(jsonDefault.body.public, false, 'JSON without public is private');
      t.equal(jsonDefault.body.publicUrl, null);
      const explicitPrivate = await uploadMultipart(server, team.teamId, team.key, file, 'public=false');
      t.equal(explicitPrivate.body.publicUrl, null, 'explicit public=false on multipart');
      const explicitPublic = await uploadJson(server, team.teamId, team.key, { file: file.content.toString('base64'), fileName: 'v.png', public: true });
      t.equal(explicitPublic.body.public, true, 'explicit public=true on JSON');

      // Folder defaults (the folder routes come later; set the rule directly).
      const privateFolder = await uploadMultipart(server, team.teamId, team.key, file, 'folder=private-shots');
      const publicFolder = await uploadJson(server, team.teamId, team.key, { file: file.content.toString('base64'), fileName: 'v.png', folder: 'public-logs' });
      const client = await connectPg(server.databaseUrl);
      await client.query('update media_folder set default_public = false where id = $1', [privateFolder.body.folderId]);
      await client.query('update media_folder set default_public = true where id = $1', [publicFolder.body.folderId]);
      await client.end();
      t.equal((await uploadMultipart(server, team.teamId, team.key, file, 'folder=private-shots')).body.public, false, 'folder defaultPublic=false beats the multipart default');
      t.equal((await uploadJson(server, team.teamId, team.key, { file: 'AAAA', fileName: 'v.bin', folderId: publicFolder.body.folderId })).body.public, true, 'folder defaultPublic=true beats the JSON default');
      t.equal((await uploadMultipart(server, team.teamId, team.key, file, 'folder=private-shots&public=true')).body.public, true, 'explicit public wins over the folder');
    });

    t.test(`${driver}: folders, folderId and tags`, async (t) => {
      const team = await server.createTeam('Folders', 'enterprise');
      const file = { content: pngLike(64), fileName: 'f.png' };
      const nested = await uploadMultipart(server, team.teamId, team.key, file, `folder=${encodeURIComponent('a/b/c/d/e')}`);
      t.equal(nested.status, 201, 'five levels are fine');
      const again = await uploadMultipart(server, team.teamId, team.key, file, `folder=${encodeURIComponent('a/b/c/d/e')}`);
      t.equal(again.body.folderId, nested.body.folderId, 'an existing path is reused');
      const twoParents = await uploadMultipart(server, team.teamId, team.key, file, `folder=${encodeURIComponent('x/2024')}`);
      const otherParent = await uploadMultipart(server, team.teamId, team.key, file, `folder=${encodeURIComponent('y/2024')}`);
      t.not(twoParents.body.folderId, otherParent.body.folderId, 'the same name under two parents');
      const byId = await uploadJson(server, team.teamId, team.key, { file: 'AAAA', fileName: 'x.bin', folderId: nested.body.folderId });
      t.equal(byId.body.folderId, nested.body.folderId);

      const before = await teamStorageState(server.databaseUrl, team.teamId);
      expectError(t, await uploadMultipart(server, team.teamId, team.key, file, `folder=${encodeURIComponent('1/2/3/4/5/6')}`), 400, 'error.badRequest');
      expectError(t, await uploadMultipart(server, team.teamId, team.key, file, `folder=a&folderId=${nested.body.folderId}`), 400, 'error.badRequest');
      expectError(t, await uploadMultipart(server, team.teamId, team.key, file, 'folderId=00000000-0000-4000-8000-000000000000'), 404, 'error.notFound');
      expectError(t, await uploadJson(server, team.teamId, team.key, { file: 'AAAA', fileName: 'x.bin', folderId: '00000000-0000-4000-8000-000000000000' }), 404, 'error.notFound');
      expectError(t, await uploadJson(server, team.teamId, team.key, { file: 'AAAA', fileName: 'x.bin', folder: 'a', folderId: nested.body.folderId }), 400, 'error.badRequest');
      const otherTeam = await server.createTeam('OtherFolders', 'enterprise');
      expectError(t, await uploadMultipart(server, otherTeam.teamId, otherTeam.key, file, `folderId=${nested.body.folderId}`), 404, 'error.notFound');

      // Spec 2.3: upper case is an invalid tag, not lower-cased (issue 17.10).
      expectError(t, await uploadMultipart(server, team.teamId, team.key, file, 'tags=map:1,Map:Dust'), 400, 'error.badRequest');
      expectError(t, await uploadJson(server, team.teamId, team.key, { file: 'AAAA', fileName: 'x.bin', tags: ['ok', 'OK'] }), 400, 'error.badRequest');
      const afterRefusals = await teamStorageState(server.databaseUrl, team.teamId);
      t.equal(afterRefusals.files, before.files, 'refused uploads left no rows');
      t.equal(afterRefusals.usedStorage, before.usedStorage);

      const tagged = await uploadMultipart(server, team.teamId, team.key, file, `tags=${encodeURIComponent('map:de_dust2,player@42,a.b_c-d')}`);
      t.same(tagged.body.tags, ['map:de_dust2', 'player@42', 'a.b_c-d']);
      const jsonTags = await uploadJson(server, team.teamId, team.key, { file: 'AAAA', fileName: 'x.bin', tags: ['one', 'two'] });
      t.same(jsonTags.body.tags, ['one', 'two']);
      expectError(t, await uploadMultipart(server, team.teamId, team.key, file, 'tags=bad%20tag'), 400, 'error.badRequest');
      expectError(t, await uploadMultipart(server, team.teamId, team.key, file, `tags=${'x'.repeat(65)}`), 400, 'error.badRequest');
      const tooMany = Array.from({ length: 21 }, (_, i) => `t${i}`);
      expectError(t, await uploadMultipart(server, team.teamId, team.key, file, `tags=${tooMany.join(',')}`), 400, 'error.badRequest');
      expectError(t, await uploadJson(server, team.teamId, team.key, { file: 'AAAA', fileName: 'x.bin', tags: tooMany }), 400, 'error.badRequest');
    });

    t.test(`${driver}: the field named file, else the first file`, async (t) => {
      const team = await server.createTeam('Fields', 'enterprise');
      const first = pngLike(300);
      const named = pngLike(500);
      const both = multipartBody([
        { field: 'attachment', fileName: 'first.png', content: first },
        { field: 'file', fileName: 'named.png', content: named },
      ]);
      const response = await send(server, 'POST', uploadPath(team.teamId), team.key, both.body, { 'content-type': both.contentType });
      t.equal(response.status, 201);
      t.equal(response.body.fileName, 'named.png');
      t.ok((await readBack(server, response.body.id)).equals(named));
      const onlyOther = multipartBody([{ field: 'upload', fileName: 'other.png', content: first }]);
      const fallback = await send(server, 'POST', uploadPath(team.teamId), team.key, onlyOther.body, { 'content-type': onlyOther.contentType });
      t.equal(fallback.body.fileName, 'other.png', 'without a file field the first file is taken');
      const renamed = await uploadMultipart(server, team.teamId, team.key, { content: first, fileName: 'orig.png' }, 'fileName=renamed.png');
      t.equal(renamed.body.fileName, 'renamed.png', 'the fileName option wins');
      await settledObjects(driver, server.dataDir, team.teamId, 3);
      const stored = await settledObjects(driver, server.dataDir, team.teamId, 3);
      t.equal(stored.objects.length, 3, 'the abandoned first part left nothing');
    });

    t.test(`${driver}: refusals before the body store nothing`, async (t) => {
      const free = await server.createTeam('FreeRefusals');
      const before = await teamStorageState(server.databaseUrl, free.teamId);
      const file = { content: pngLike(10), fileName: 'r.png' };
      const path = uploadPath(free.teamId);

      expectError(t, await uploadMultipart(server, free.teamId, 'tws_0123456789abcdef_' + 'A'.repeat(43), file), 401, 'error.unauthorized');
      expectError(t, await uploadMultipart(server, free.teamId, enterprise.key, file), 401, 'error.unauthorized');
      const viewer = await server.admin('POST', `/v1/admin/teams/${free.teamId}/members`, { name: 'viewer', permissions: ['team.media.view'] });
      const viewerKey = await server.admin('POST', `/v1/admin/teams/${free.teamId}/api-keys`, { teamMemberId: viewer.body.id });
      expectError(t, await uploadMultipart(server, free.teamId, viewerKey.body.key, file), 403, 'error.forbidden');
      const scoped = await server.admin('POST', `/v1/admin/teams/${free.teamId}/api-keys`, { scopes: ['media:upload'] });
      t.equal((await uploadMultipart(server, free.teamId, scoped.body.key, file)).status, 201, 'a media:upload key may upload');
      before.files += 1;
      before.usedStorage += 10;

      // 413 and 402 from Content-Length alone, with a body that is never sent.
      for (const [length, status, key] of [
        [260_000_001, 413, 'error.payloadTooLarge'],
        [20_000_000, 402, 'error.teamLimits.maxMediaFileSize'],
      ] as const) {
        const response = await headersOnly(server, path, free.key, length, 'multipart/form-data; boundary=x');
        t.equal(response.status, status, `Content-Length ${length}`);
        t.equal(response.body.messageKey, key);
      }
      const jsonTooLarge = await headersOnly(server, `/v1/cdn/media/${free.teamId}/upload`, free.key, 140_000_001, 'application/json');
      t.equal(jsonTooLarge.status, 413);
      await server.admin('PATCH', `/v1/admin/teams/${free.teamId}/limits`, { maxTeamStorage: 1 });
      const full = await headersOnly(server, path, free.key, 200 * KiB, 'multipart/form-data; boundary=x');
      t.equal(full.status, 402);
      t.equal(full.body.messageKey, 'error.teamLimits.maxTeamStorage');
      await server.admin('PATCH', `/v1/admin/teams/${free.teamId}/limits`, { maxTeamStorage: 97656 });
      expectError(t, await send(server, 'POST', path, free.key, Buffer.from('x'), { 'content-type': 'text/plain' }), 400, 'error.badRequest');
      await expectNothingLeft(t, server, driver, free.teamId, before);
    });

    t.test(`${driver}: refusals while streaming abort the write and count nothing`, async (t) => {
      const team = await server.createTeam('StreamRefusals');
      const before = await teamStorageState(server.databaseUrl, team.teamId);

      // 402: the file grows past maxMediaFileSize (10 MB on free) in a chunked body.
      const tooBig = await chunkedUpload(server, uploadPath(team.teamId), team.key, 11 * MiB);
      t.equal(tooBig.status, 402);
      t.equal(tooBig.body.messageKey, 'error.teamLimits.maxMediaFileSize');

      // 402: past the remaining storage.
      await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxTeamStorage: 2048 });
      const overQuota = await chunkedUpload(server, uploadPath(team.teamId), team.key, 3 * MiB);
      t.equal(overQuota.status, 402, 'past the remaining storage', { body: overQuota.body });
      t.equal(overQuota.body.messageKey, 'error.teamLimits.maxTeamStorage');
      await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxTeamStorage: 97656 });

      // 415: executables, scripts, HTML and SVG, also behind a harmless name and type.
      const blocked: [string, Buffer, string][] = [
        ['ELF named .png', Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1]), randomBytes(5000)]), 'image/png'],
        ['PE named .jpg', Buffer.concat([Buffer.from('MZ'), randomBytes(5000)]), 'image/jpeg'],
        ['shell script named .txt', Buffer.from('#!/bin/sh\nrm -rf /\n'), 'text/plain'],
        ['HTML named .png', Buffer.from('\ufeff  <!DOCTYPE html><html><script>alert(1)</script>'), 'image/png'],
        ['SVG named .png', Buffer.from('<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"></svg>'), 'image/png'],
      ];
      for (const [label, content, type] of blocked) {
        const response = await uploadMultipart(server, team.teamId, team.key, { content, fileName: 'innocent.png', contentType: type });
        expectError(t, response, 415, 'error.unsupportedMediaType');
        t.comment(label);
      }
      expectError(t, await uploadMultipart(server, team.teamId, team.key, { content: Buffer.from('plain'), fileName: 'page.html' }), 415, 'error.unsupportedMediaType');
      expectError(t, await uploadMultipart(server, team.teamId, team.key, { content: Buffer.from('plain'), fileName: 'x.bin', contentType: 'image/svg+xml' }), 415, 'error.unsupportedMediaType');
      expectError(t, await uploadJson(server, team.teamId, team.key, { file: Buffer.from('console.log(1)').toString('base64'), fileName: 'app.js' }), 415, 'error.unsupportedMediaType');
      expectError(t, await uploadJson(server, team.teamId, team.key, { file: `data:text/html;base64,${Buffer.from('hi').toString('base64')}`, fileName: 'x.txt' }), 415, 'error.unsupportedMediaType');

      // 400: invalid base64, malformed JSON and multipart, missing pieces.
      expectError(t, await uploadJson(server, team.teamId, team.key, { file: 'not base64!', fileName: 'x.bin' }), 400, 'error.badRequest');
      expectError(t, await uploadJson(server, team.teamId, team.key, '{"file": "AAAA", "fileName": '), 400, 'error.badRequest');
      expectError(t, await uploadJson(server, team.teamId, team.key, { fileName: 'x.bin' }), 400, 'error.missingArgument.file');
      expectError(t, await uploadJson(server, team.teamId, team.key, { file: 'AAAA' }), 400, 'error.missingArgument.fileName');
      expectError(t, await uploadJson(server, team.teamId, team.key, { file: 'AAAA', fileName: 'x.bin', public: 'yes' }), 400, 'error.badRequest');
      const truncated = multipartBody([{ content: pngLike(1000) }]);
      const cut = truncated.body.subarray(0, truncated.body.length - 20);
      expectError(t, await send(server, 'POST', uploadPath(team.teamId), team.key, cut, { 'content-type': truncated.contentType }), 400, 'error.badRequest');
      const noFile = multipartBody([], { note: 'no file here' });
      expectError(t, await send(server, 'POST', uploadPath(team.teamId), team.key, noFile.body, { 'content-type': noFile.contentType }), 400, 'error.badRequest');

      // 413: a chunked body that grows past the route's limit (JSON: 140 MB), with the team's own limits lifted.
      await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxMediaFileSize: null, maxTeamStorage: null });
      const huge = await chunkedUpload(server, `/v1/cdn/media/${team.teamId}/upload`, team.key, 141 * 1_000_000, 'application/json', Buffer.from('{"fileName":"a.bin","file":"'), 'A');
      t.equal(huge.status, 413, 'a JSON body past 140 MB', { body: huge.body });
      t.equal(huge.body.messageKey, 'error.payloadTooLarge');

      await expectNothingLeft(t, server, driver, team.teamId, before);
    });

    t.test(`${driver}: a blocked name or declared type is refused before its bytes reach storage`, async (t) => {
      const team = await server.createTeam('EarlyRefusal', 'enterprise');
      const before = await teamStorageState(server.databaseUrl, team.teamId);
      // Watches the service's real store: a refused file must never open a storage writer.
      const store = server.app.services.store;
      const openWriter = store.openWriter.bind(store);
      let writersOpened = 0;
      store.openWriter = (key, options) => {
        writersOpened++;
        return openWriter(key, options);
      };
      t.teardown(() => {
        store.openWriter = openWriter;
      });
      const boundary = 'early-refusal-boundary';
      const cases: Array<[string, string, string, Buffer, Buffer]> = [
        ['multipart .exe', uploadPath(team.teamId), `multipart/form-data; boundary=${boundary}`,
          Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="setup.exe"\r\nContent-Type: application/octet-stream\r\n\r\n`), randomBytes(64 * KiB)],
        ['multipart declared text/html', uploadPath(team.teamId), `multipart/form-data; boundary=${boundary}`,
          Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="page.txt"\r\nContent-Type: text/html\r\n\r\n`), Buffer.alloc(64 * KiB, 0x61)],
        ['multipart query fileName .js', uploadPath(team.teamId, 'fileName=app.js'), `multipart/form-data; boundary=${boundary}`,
          Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="fine.png"\r\n\r\n`), randomBytes(64 * KiB)],
        ['JSON with fileName first', `/v1/cdn/media/${team.teamId}/upload`, 'application/json', Buffer.from('{"fileName":"tool.bat","file":"'), Buffer.alloc(64 * KiB, 0x41)],
        ['JSON data URI of SVG', `/v1/cdn/media/${team.teamId}/upload`, 'application/json', Buffer.from('{"file":"data:image/svg+xml;base64,'), Buffer.alloc(64 * KiB, 0x41)],
      ];
      for (const [label, path, contentType, prefix, fill] of cases) {
        const size = 250 * 1_000_000;
        const response = await sendChunked(`${server.baseUrl}${path}`, { authorization: `Bearer ${team.key}`, 'content-type': contentType }, size, prefix, fill);
        t.equal(response.status, 415, `${label}: 415`);
        t.equal(response.body.messageKey, 'error.unsupportedMediaType', label);
        t.ok(response.sent < 64 * MiB, `${label}: answered after ${Math.round(response.sent / MiB)} MiB of the 250 MB body`);
      }
      t.equal(writersOpened, 0, 'no storage writer was opened');
      await expectNothingLeft(t, server, driver, team.teamId, before);
      // The check does not refuse what it should not: a fine upload on the same routes still lands.
      const fine = await uploadJson(server, team.teamId, team.key, { fileName: 'fine.png', file: pngLike(1000).toString('base64') });
      t.equal(fine.status, 201);
      t.equal(writersOpened, 1);
    });

    t.test(`${driver}: a client that disconnects half-way leaves nothing`, async (t) => {
      const team = await server.createTeam('Aborts', 'enterprise');
      const before = await teamStorageState(server.databaseUrl, team.teamId);
      for (const size of [64 * KiB, 12 * MiB]) {
        await abortedUpload(server, uploadPath(team.teamId), team.key, size);
        await new Promise((resolve) => setTimeout(resolve, 200));
        await expectNothingLeft(t, server, driver, team.teamId, before);
      }
    });

    t.test(`${driver}: parallel uploads can never together pass the storage limit`, async (t) => {
      const team = await server.createTeam('Quota', 'enterprise');
      // 5 MiB of storage, 12 uploads of 1 MiB each: at most 5 can land.
      await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxTeamStorage: 5 * 1024 });
      const content = pngLike(MiB);
      const responses = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          i % 2 === 0
            ? uploadMultipart(server, team.teamId, team.key, { content, fileName: `q${i}.png` })
            : uploadJson(server, team.teamId, team.key, { file: content.toString('base64'), fileName: `q${i}.png` }),
        ),
      );
      const created = responses.filter((response) => response.status === 201).length;
      const refused = responses.filter((response) => response.status === 402).length;
      t.equal(created + refused, 12, 'every upload either landed or was refused with 402');
      t.equal(created, 5, 'exactly as many as fit');
      const state = await teamStorageState(server.databaseUrl, team.teamId);
      t.equal(state.usedStorage, state.sumOfSizes, 'the counter equals the sum of the stored files');
      t.ok(state.usedStorage <= 5 * 1024 * 1024);
      t.equal(state.reservedStorage, 0);
      t.equal(state.reservations, 0);
      t.equal((await settledObjects(driver, server.dataDir, team.teamId, created)).objects.length, created, 'storage holds exactly the landed files');
    });

    t.test(`${driver}: a large upload reserves its declared size at once where the team has room, in steps near its limit`, async (t) => {
      /** Sends half of an 8 MiB upload, reads the team's reservation, then the rest. */
      const reservedMidway = async ({ teamId, key }: { teamId: string; key: string }) => {
        const held = heldUpload(server, teamId, key, pngLike(8 * MiB));
        held.request.on('error', () => undefined);
        t.ok(await eventually(async () => (await teamStorageState(server.databaseUrl, teamId)).reservations === 1), 'the upload is under way');
        const reserved = (await teamStorageState(server.databaseUrl, teamId)).reservedStorage;
        held.finish();
        t.equal((await held.response).status, 201, 'the upload lands');
        const state = await teamStorageState(server.databaseUrl, teamId);
        t.match(state, { files: 1, reservedStorage: 0, reservations: 0 }, 'its reservation became used storage');
        t.equal(state.usedStorage, state.sumOfSizes);
        return { reserved, bodyLength: held.bodyLength };
      };
      const roomy = await reservedMidway(await server.createTeam('Roomy', 'enterprise'));
      t.equal(roomy.reserved, roomy.bodyLength, 'with room to spare: the whole declared size, in one reservation');

      const near = await server.createTeam('Near', 'enterprise');
      await server.admin('PATCH', `/v1/admin/teams/${near.teamId}/limits`, { maxTeamStorage: 16 * 1024 });
      const stepped = await reservedMidway(near);
      t.ok(stepped.reserved > 0 && stepped.reserved <= 4 * MiB, `near the limit: steps, no further than the bytes received (${stepped.reserved})`);
    });

    t.test(`${driver}: a screenshot of declared size streams unreserved; a team filled meanwhile refuses it at its commit, leaving nothing`, async (t) => {
      const team = await server.createTeam('Unreserved', 'enterprise');
      await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxTeamStorage: 5 * 1024 });
      const held = heldUpload(server, team.teamId, team.key, pngLike(3 * MiB));
      held.request.on('error', () => undefined);
      if (driver === 'fs') {
        // Past UNRESERVED_BYTES on disk: an upload of unknown size would hold a reservation by now.
        const tempBytes = async () => {
          const dir = join(server.dataDir, 'files', '.uploads');
          const names = await readdir(dir).catch(() => [] as string[]);
          const sizes = await Promise.all(names.map((name) => stat(join(dir, name)).then((info) => info.size, () => 0)));
          return sizes.reduce((sum, size) => sum + size, 0);
        };
        t.ok(await eventually(async () => (await tempBytes()) >= MiB), 'half of it is in its temp file');
      }
      t.match(await teamStorageState(server.databaseUrl, team.teamId), { reservedStorage: 0, reservations: 0 }, 'nothing reserved');
      const filler = await uploadMultipart(server, team.teamId, team.key, { content: pngLike(3 * MiB), fileName: 'filler.png' });
      t.equal(filler.status, 201, 'another upload fills the team meanwhile');
      held.finish();
      expectError(t, await held.response, 402, 'error.teamLimits.maxTeamStorage');
      await expectNothingLeft(t, server, driver, team.teamId, { files: 1, usedStorage: 3 * MiB });
    });

    t.test(`${driver}: a successful upload records its event and usage in the same transaction`, async (t) => {
      const team = await server.createTeam('Events');
      await subscribeToUploads(server.databaseUrl, team.teamId);
      const response = await uploadMultipart(server, team.teamId, team.key, { content: pngLike(1234), fileName: 'e.png' }, 'tags=a');
      await uploadJson(server, team.teamId, team.key, { file: 'not base64!', fileName: 'bad.bin' });
      const client = await connectPg(server.databaseUrl);
      t.teardown(() => client.end());
      const events = await client.query<{ kind: string; payload: { media: { id: string; size: number } } }>('select kind, payload from media_event where team_id = $1', [team.teamId]);
      t.equal(events.rows.length, 1, 'one event for one successful upload, none for the refused one');
      t.equal(events.rows[0]!.kind, 'media.uploaded');
      t.match(events.rows[0]!.payload.media, { id: response.body.id, size: 1234, fileName: 'e.png', tags: ['a'] });
      const usage = await client.query<{ uploads: number; upload_bytes: string; api_uploads: number }>('select uploads, upload_bytes, api_uploads from media_usage_daily where team_id = $1', [team.teamId]);
      t.match(usage.rows, [{ uploads: 1, upload_bytes: '1234', api_uploads: 1 }]);
    });

    t.test(`${driver}: curl -F uploads a file`, async (t) => {
      const team = await server.createTeam('Curl');
      const content = pngLike(50 * KiB);
      const file = join(server.dataDir, 'curl-upload.png');
      await writeFile(file, content);
      const { stdout } = await promisify(execFile)('curl', ['-s', '-H', `Authorization: Bearer ${team.key}`, '-F', `file=@${file}`, `${server.baseUrl}${uploadPath(team.teamId, 'tags=curl')}`]);
      const body = JSON.parse(stdout);
      t.match(body, { fileName: 'curl-upload.png', size: content.length, tags: ['curl'], public: true });
      t.ok((await readBack(server, body.id)).equals(content));
    });
  }
}

/** Sends only the headers of an upload (a large Content-Length) and reads the early answer. */
function headersOnly(server: TestServer, path: string, key: string, length: number, contentType: string): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(`${server.baseUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-length': String(length), 'content-type': contentType },
    });
    request.on('response', (response) => {
      let text = '';
      response.on('data', (chunk) => (text += chunk));
      response.on('end', () => {
        request.destroy();
        resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) });
      });
    });
    request.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' ? undefined : reject(error)));
    request.flushHeaders();
  });
}

/** A chunked (no Content-Length) upload of `size` bytes, multipart unless a prefix is given. */
function chunkedUpload(
  server: TestServer,
  path: string,
  key: string,
  size: number,
  contentType = 'multipart/form-data; boundary=chunked',
  prefix = Buffer.from('--chunked\r\nContent-Disposition: form-data; name="file"; filename="big.png"\r\nContent-Type: image/png\r\n\r\n'),
  fill = '',
  suffix = fill ? Buffer.alloc(0) : Buffer.from('\r\n--chunked--\r\n'),
): Promise<{ status: number; body: any }> {
  const piece = fill ? Buffer.alloc(256 * KiB, fill) : pngLike(256 * KiB);
  return sendChunked(`${server.baseUrl}${path}`, { authorization: `Bearer ${key}`, 'content-type': contentType }, size, prefix, piece, suffix);
}

/** Starts an upload of `size` bytes, sends about half, then cuts the connection. */
function abortedUpload(server: TestServer, path: string, key: string, size: number): Promise<void> {
  const { body, contentType } = multipartBody([{ content: pngLike(size), fileName: 'cut.png' }]);
  return new Promise((resolve) => {
    const request = httpRequest(`${server.baseUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': contentType, 'content-length': String(body.length) },
    });
    request.on('error', () => resolve());
    request.on('response', () => resolve());
    request.write(body.subarray(0, Math.floor(body.length / 2)), () => {
      setTimeout(() => {
        request.destroy();
        resolve();
      }, 100);
    });
  });
}
