import { randomBytes } from 'node:crypto';
import t from 'tap';
import { hashContent, loadXxhash } from '../../src/uploads/hashing/content-hash.ts';
import { startTestServer } from '../helpers/server.ts';
import { uploadJson, uploadMultipart } from '../helpers/uploads.ts';

// Both hashers give the stored hash of src/uploads/hashing/content-hash.ts: inline (the default) and in the worker pool.
for (const [label, offload] of [['inline', null], ['worker pool', 0]] as const) {
  t.test(`${label} hashing stores the defined content hash`, async (t) => {
    const server = await startTestServer(t, { settings: { HASH_OFFLOAD_MIN_BYTES: offload } });
    const team = await server.createTeam('Hashing', 'enterprise');
    const xxhash = await loadXxhash();
    for (const size of [0, 1, 1024 * 1024, 3 * 1024 * 1024 + 17]) {
      const content = randomBytes(size);
      const multipart = await uploadMultipart(server, team.teamId, team.key, { content, fileName: `h${size}.bin` });
      t.equal(multipart.body.hash, hashContent(xxhash, content), `multipart ${size} bytes`);
      const json = await uploadJson(server, team.teamId, team.key, { file: content.toString('base64'), fileName: `h${size}.bin` });
      t.equal(json.body.hash, hashContent(xxhash, content), `JSON ${size} bytes`);
    }
  });
}
