import t from 'tap';
import { contentSecurityPolicy } from '../../src/http/dashboard/dashboard-headers.ts';
import { dashboardPage } from '../../src/http/dashboard/dashboard-page.ts';
import { chooseEncoding, etagOf, staticAsset } from '../../src/http/dashboard/static-asset.ts';

// The dashboard's serving pieces without a server: encoding negotiation, ETags, the page's import
// map and its hash, the Content-Security-Policy.

t.test('the encoding follows Accept-Encoding, q=0 refuses, and a file that does not shrink goes plain', async (t) => {
  const text = await staticAsset('text/javascript; charset=utf-8', 'export const x = 1;\n'.repeat(50));
  t.equal(chooseEncoding(text, 'gzip, deflate, br, zstd'), 'br');
  t.equal(chooseEncoding(text, 'gzip'), 'gzip');
  t.equal(chooseEncoding(text, 'br;q=0, gzip;q=0.5'), 'gzip');
  t.equal(chooseEncoding(text, 'br;q=0.0, gzip;q=0'), 'identity');
  t.equal(chooseEncoding(text, undefined), 'identity');
  t.equal(chooseEncoding(text, 'BR'), 'br', 'names in any case');
  const tiny = await staticAsset('text/css; charset=utf-8', 'a{}');
  t.equal(tiny.brotli, null);
  t.equal(tiny.gzip, null);
  t.equal(chooseEncoding(tiny, 'br, gzip'), 'identity', 'compressing three bytes makes them longer');
  t.not(etagOf(text, 'br'), etagOf(text, 'gzip'));
  t.not(etagOf(text, 'gzip'), etagOf(text, 'identity'));
  t.match(etagOf(text, 'identity'), /^"[A-Za-z0-9_-]{22}"$/);
});

t.test('the page gets the import map, preloads, and the map\'s hash for the policy', async (t) => {
  const template = '<head>\n<!-- import map -->\n<!-- module preloads -->\n</head>';
  const page = dashboardPage(template, { preact: '/app/vendor/preact.mjs' }, { assets: ['main.js'], vendor: ['/app/vendor/preact.mjs'] });
  t.match(page.html, '<script type="importmap">{"imports":{"preact":"/app/vendor/preact.mjs"}}</script>');
  t.match(page.html, '<link rel="modulepreload" href="/app/vendor/preact.mjs">\n<link rel="modulepreload" href="/app/assets/main.js">');
  // sha256 of the map's exact text, base64, as CSP hashes are written.
  const { createHash } = await import('node:crypto');
  t.equal(page.importMapHash, `'sha256-${createHash('sha256').update('{"imports":{"preact":"/app/vendor/preact.mjs"}}').digest('base64')}'`);
  t.throws(() => dashboardPage('<head></head>', {}, { assets: [], vendor: [] }), /must hold the marks/);
});

t.test('the policy names the file origins once each, and allows no inline script', async (t) => {
  const policy = contentSecurityPolicy({ importMapHash: "'sha256-abc'", fileOrigins: ['https://media.example.com', 'https://cdn.example.net/base', 'https://media.example.com/'] });
  t.match(policy, "script-src 'self' 'sha256-abc';");
  t.match(policy, "img-src 'self' https://media.example.com https://cdn.example.net blob: data:;");
  t.match(policy, "frame-ancestors 'none'");
  t.notMatch(policy, /unsafe/);
});
