import t from 'tap';
import { ServiceError } from '../../src/errors/service-error.ts';
import { bodyChunks } from '../../src/uploads/tus/body-chunks.ts';
import { parseTusMetadata } from '../../src/uploads/tus/tus-metadata.ts';
import type { UploadBody, UploadBodyConsumer } from '../../src/uploads/receive/upload-body.ts';

const b64 = (value: string) => Buffer.from(value).toString('base64');

function refusal(fn: () => unknown): { status: number; messageKey: string; value: unknown } {
  try {
    fn();
  } catch (error) {
    if (error instanceof ServiceError) return { status: error.status, messageKey: error.messageKey, value: error.value };
    throw error;
  }
  throw new Error('no refusal');
}

t.test('Upload-Metadata becomes the upload options, validated like the multipart route', (t) => {
  t.same(parseTusMetadata(`filename ${b64('clip.mp4')},filetype ${b64('video/mp4')},folder ${b64('replays/2026')},tags ${b64('a,b,a')},public ${b64('false')}`), {
    fileName: 'clip.mp4', declaredType: 'video/mp4', folderPath: ['replays', '2026'], folderId: null, tags: ['a', 'b'], public: false, stripMetadata: null,
  });
  t.same(parseTusMetadata(`filename ${b64('dir/ünïcode ✓.png')},relativePath,name ${b64('ignored')}`), {
    fileName: 'ünïcode ✓.png', declaredType: null, folderPath: null, folderId: null, tags: [], public: null, stripMetadata: null,
  }, 'the last path segment; unknown keys (with or without a value) ignored');
  t.match(parseTusMetadata(`filename ${b64('a.jpg')},stripMetadata ${b64('true')}`), { stripMetadata: true });
  t.end();
});

t.test('refusals: 400 with the field named', (t) => {
  t.match(refusal(() => parseTusMetadata(undefined)), { status: 400, messageKey: 'error.missingArgument' });
  t.match(refusal(() => parseTusMetadata(`filetype ${b64('image/png')}`)), { status: 400, messageKey: 'error.missingArgument' });
  t.match(refusal(() => parseTusMetadata('filename %%%')), { status: 400, value: 'Upload-Metadata' });
  t.match(refusal(() => parseTusMetadata(`filename ${b64('a.png')},filename ${b64('b.png')}`)), { status: 400, value: 'Upload-Metadata' }, 'a repeated key');
  t.match(refusal(() => parseTusMetadata(`filename ${b64('a\u0000.png')}`)), { status: 400, value: 'fileName' });
  t.match(refusal(() => parseTusMetadata(`filename ${b64('a.png')},tags ${b64('UPPER')}`)), { status: 400, value: 'tags' });
  t.match(refusal(() => parseTusMetadata(`filename ${b64('a.png')},public ${b64('1')}`)), { status: 400, value: 'public' });
  t.match(refusal(() => parseTusMetadata(`filename ${b64('a.png')},folderId ${b64('nope')}`)), { status: 400, value: 'folderId' });
  t.match(refusal(() => parseTusMetadata(`filename ${b64('a.png')},folder ${b64('x')},folderId ${b64('7f4895e7-88ff-402a-8be8-65c8abe06a88')}`)), { status: 400, value: 'folder' });
  t.end();
});

/** A body fed by hand, recording pause and resume. */
function fakeBody() {
  let consumer: UploadBodyConsumer | null = null;
  const calls: string[] = [];
  const body: UploadBody = {
    declaredLength: null,
    complete: false,
    consume: (next) => {
      consumer = next;
    },
    pause: () => calls.push('pause'),
    resume: () => calls.push('resume'),
  };
  return { body, calls, feed: () => consumer! };
}

t.test('bodyChunks: in order, paused above the high-water mark and resumed below half of it, then the end or the abort', async (t) => {
  const { body, calls, feed } = fakeBody();
  const chunks = bodyChunks(body, 10);
  feed().chunk(Buffer.alloc(6));
  feed().chunk(Buffer.alloc(6));
  t.same(calls, ['pause'], 'paused past 10 bytes waiting');
  const seen: number[] = [];
  const iterator = chunks[Symbol.asyncIterator]();
  seen.push((await iterator.next()).value.length);
  t.same(calls, ['pause'], 'still 6 bytes waiting: paused');
  seen.push((await iterator.next()).value.length);
  t.same(calls, ['pause', 'resume'], 'resumed at 5 or fewer waiting');
  const pending = iterator.next();
  feed().chunk(Buffer.alloc(3));
  seen.push((await pending).value.length);
  feed().end();
  t.ok((await iterator.next()).done);
  t.same(seen, [6, 6, 3]);

  const second = fakeBody();
  const aborted = bodyChunks(second.body)[Symbol.asyncIterator]();
  second.feed().chunk(Buffer.from('ab'));
  second.feed().abort(new Error('client gone'));
  t.equal((await aborted.next()).value.toString(), 'ab', 'what arrived first is still read');
  await t.rejects(aborted.next(), /client gone/);
});
