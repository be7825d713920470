import t from 'tap';
import { contentTypeAllowed, contentTypeListSchema, declaredTypeRefusal, sizeRefusal, storedTypeRefusal } from '../../src/uploads/options/file-constraints.ts';

t.test('a type matches an exact entry or its type/* entry, without case or parameters', (t) => {
  const allowed = ['image/*', 'application/pdf'];
  for (const type of ['image/png', 'IMAGE/JPEG', 'image/webp; q=1', 'application/pdf']) t.ok(contentTypeAllowed(allowed, type), type);
  for (const type of ['text/plain', 'application/pdfx', 'imagex/png', 'video/mp4', '', 'image']) t.notOk(contentTypeAllowed(allowed, type), type || '(empty)');
  t.end();
});

t.test('the list: 1-32 entries of type/subtype or type/*', (t) => {
  t.ok(contentTypeListSchema.safeParse(['image/*', 'text/plain', 'application/vnd.ms-excel', 'Image/PNG']).success);
  for (const bad of [[], ['*/*'], ['image'], ['image/'], ['/png'], ['image/png; q=1'], Array(33).fill('image/png')]) {
    t.notOk(contentTypeListSchema.safeParse(bad).success, JSON.stringify(bad).slice(0, 40));
  }
  t.end();
});

t.test('refusals: 415 for a declared or stored type outside the list, 413 past the size; nothing without constraints', (t) => {
  const constraints = { maxFileBytes: 100, contentTypes: ['image/*'] };
  t.equal(declaredTypeRefusal(constraints, 'text/plain')?.status, 415);
  t.equal(declaredTypeRefusal(constraints, 'application/octet-stream'), null, 'octet-stream declares nothing');
  t.equal(declaredTypeRefusal(constraints, null), null);
  t.equal(declaredTypeRefusal(constraints, 'image/png'), null);
  t.equal(storedTypeRefusal(constraints, 'application/octet-stream')?.status, 415, 'the stored type must match');
  t.equal(storedTypeRefusal(constraints, 'image/png'), null);
  t.match(sizeRefusal(constraints, 101), { status: 413, value: 100 });
  t.equal(sizeRefusal(constraints, 100), null);
  t.equal(declaredTypeRefusal(null, 'text/html'), null);
  t.equal(storedTypeRefusal({ maxFileBytes: null, contentTypes: null }, 'text/html'), null);
  t.equal(sizeRefusal(null, 10 ** 12), null);
  t.end();
});
