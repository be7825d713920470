import t, { type Test } from 'tap';
import {
  canonicalTransformQuery, parseTransform, resolveTransform, signedTransformPath, transformFileName, transformStorageKey, TRANSFORM_SIDES,
} from '../../src/domain/media/image-transform-params.ts';
import { isValidKey } from '../../src/storage/object-store.ts';

const parse = (query: string) => parseTransform(new URLSearchParams(query));

function refusal(t: Test, query: string, message: RegExp): void {
  t.throws(() => parse(query), { status: 400, messageKey: 'error.badRequest', message }, `${query}: 400 ${message}`);
}

t.test('no transform parameter: the file as it is, whatever else the query holds', (t) => {
  t.equal(parse(''), null);
  t.equal(parse('expires=1&signature=x&v=2'), null);
  t.end();
});

t.test('allowed values are parsed, with fit inside by default', (t) => {
  t.same(parse('w=320'), { width: 320, height: null, fit: 'inside', format: null, quality: null });
  t.same(parse('h=2560&w=16&fit=cover&format=avif&q=50'), { width: 16, height: 2560, fit: 'cover', format: 'avif', quality: 50 });
  t.same(parse('format=png'), { width: null, height: null, fit: 'inside', format: 'png', quality: null });
  t.same(parse('fit=contain&expires=1'), { width: null, height: null, fit: 'contain', format: null, quality: null });
  for (const side of TRANSFORM_SIDES) t.equal(parse(`w=${side}`)!.width, side);
  t.end();
});

t.test('every value off the lists is a 400 naming what is allowed', (t) => {
  for (const value of ['0', '15', '100', '321', '4096', '-320', '320.0', '0320', '3e2', 'abc', '', ' 320']) refusal(t, `w=${encodeURIComponent(value)}`, /^w must be one of 16, 32/);
  refusal(t, 'h=5000', /^h must be one of/);
  refusal(t, 'fit=fill', /^fit must be one of cover, contain, inside$/);
  refusal(t, 'fit=', /^fit must be one of/);
  refusal(t, 'format=gif', /^format must be one of webp, avif, jpeg, png$/);
  refusal(t, 'format=WEBP', /^format must be one of/);
  for (const value of ['0', '1', '42', '81', '100', '101', '080', 'high']) refusal(t, `q=${value}`, /^q must be one of 50, 60, 70, 75, 80, 85, 90, 95$/);
  refusal(t, 'w=320&w=640', /^Give w once$/);
  refusal(t, 'format=webp&format=webp', /^Give format once$/);
  t.end();
});

t.test('the canonical query has one spelling per meaning', (t) => {
  t.equal(canonicalTransformQuery(parse('w=320')!), 'w=320&fit=inside');
  t.equal(canonicalTransformQuery(parse('fit=inside&w=320')!), 'w=320&fit=inside');
  t.equal(canonicalTransformQuery(parse('q=90&format=webp&fit=cover&h=256&w=320&v=7')!), 'w=320&h=256&fit=cover&format=webp&q=90');
  t.equal(signedTransformPath('media/team/a/b.png', parse('w=320')!), 'media/team/a/b.png?w=320&fit=inside');
  t.end();
});

t.test('resolved for a file: output format, quality, fit and variant name', (t) => {
  t.match(resolveTransform(parse('w=320')!, 'image/png'), { format: 'png', quality: null, fit: 'inside', contentType: 'image/png', variant: '320xauto-inside.png' });
  t.match(resolveTransform(parse('w=320&q=90')!, 'image/png'), { quality: null, variant: '320xauto-inside.png' }, 'PNG is lossless: q makes no other variant');
  t.match(resolveTransform(parse('w=320')!, 'image/jpeg'), { format: 'jpeg', quality: 80, variant: '320xauto-inside-q80.jpeg' });
  t.match(resolveTransform(parse('w=320&h=256&fit=cover&format=avif&q=60')!, 'image/webp'), { format: 'avif', contentType: 'image/avif', variant: '320x256-cover-q60.avif' });
  t.match(resolveTransform(parse('h=256&fit=cover')!, 'image/webp'), { fit: 'inside', variant: 'autox256-inside-q80.webp' }, 'one side: every fit keeps the aspect ratio');
  t.match(resolveTransform(parse('format=webp')!, 'image/gif'), { variant: 'autoxauto-inside-q80.webp' });
  t.match(resolveTransform(parse('w=64')!, 'image/gif'), { format: 'png' }, 'a GIF becomes a PNG of its first frame');
  for (const type of ['text/plain', 'image/svg+xml', 'application/pdf', 'image/bmp']) {
    t.throws(() => resolveTransform(parse('w=64')!, type), { status: 400, message: /^Only PNG, JPEG, WebP, GIF and AVIF images can be resized$/ }, type);
  }
  const key = transformStorageKey('team-id', 'media-id', resolveTransform(parse('w=320&h=256&fit=contain&q=95')!, 'image/jpeg').variant);
  t.equal(key, 'transforms/team-id/media-id/320x256-contain-q95.jpeg');
  t.ok(isValidKey(key), 'a valid storage key');
  t.end();
});

t.test('a resized image is named like its file with the output extension', (t) => {
  t.equal(transformFileName('shot.PNG', 'webp'), 'shot.webp');
  t.equal(transformFileName('photo.jpeg', 'jpeg'), 'photo.jpg');
  t.equal(transformFileName('noextension', 'avif'), 'noextension.avif');
  t.end();
});
