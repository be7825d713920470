import t from 'tap';
import { checkNameAndType, resolveContentType } from '../../src/domain/file-types.ts';
import { MAX_SNIFF_BYTES, sniffContent } from '../../src/uploads/sniffing/sniff-content.ts';

const enc = (text: string): Buffer => Buffer.from(text, 'utf8');
const bytes = (...parts: (number[] | string)[]): Buffer => Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part, 'latin1') : Buffer.from(part))));
const UTF8_BOM = [0xef, 0xbb, 0xbf];
const utf16le = (text: string): Buffer => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
const utf16be = (text: string): Buffer => {
  const le = Buffer.from(text, 'utf16le');
  return Buffer.concat([Buffer.from([0xfe, 0xff]), le.swap16()]);
};
/** Pads a binary header with zero bytes to a realistic head size. */
const padded = (head: Buffer, size = 512): Buffer => Buffer.concat([head, Buffer.alloc(Math.max(0, size - head.length))]);

const ftyp = (major: string, ...compatible: string[]): Buffer => {
  const box = Buffer.alloc(16 + 4 * compatible.length);
  box.writeUInt32BE(box.length, 0);
  box.write('ftyp', 4, 'latin1');
  box.write(major, 8, 'latin1');
  compatible.forEach((brand, index) => box.write(brand, 16 + 4 * index, 'latin1'));
  return padded(box);
};
const riff = (form: string): Buffer => padded(bytes('RIFF', [0x24, 0x10, 0, 0], form, 'fmt '));
const peHeader = (): Buffer => {
  const head = Buffer.alloc(256);
  head.write('MZ', 0, 'latin1');
  head.writeUInt16LE(0x90, 2);
  head.writeUInt32LE(0x80, 0x3c);
  head.write('PE\0\0', 0x80, 'latin1');
  return head;
};
const bmp = (): Buffer => {
  const head = Buffer.alloc(64);
  head.write('BM', 0, 'latin1');
  head.writeUInt32LE(64 + 16, 2);
  head.writeUInt32LE(54, 10);
  head.writeUInt32LE(40, 14);
  return head;
};
const json = (value: unknown): Buffer => enc(JSON.stringify(value, null, 2));

t.test('blocked by content, whatever the name and declared type say', (t) => {
  const cases: [string, Buffer, string][] = [
    ['ELF', padded(bytes([0x7f], 'ELF', [2, 1, 1, 0])), 'executable'],
    ['PE', peHeader(), 'executable'],
    ['Mach-O FEEDFACE', padded(bytes([0xfe, 0xed, 0xfa, 0xce, 0, 0, 0, 7])), 'executable'],
    ['Mach-O FEEDFACF', padded(bytes([0xfe, 0xed, 0xfa, 0xcf, 0, 0, 0, 7])), 'executable'],
    ['Mach-O CEFAEDFE', padded(bytes([0xce, 0xfa, 0xed, 0xfe, 7, 0, 0, 0])), 'executable'],
    ['Mach-O CFFAEDFE', padded(bytes([0xcf, 0xfa, 0xed, 0xfe, 7, 0, 0, 1])), 'executable'],
    ['Mach-O fat binary / Java class CAFEBABE', padded(bytes([0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 2])), 'executable'],
    ['Java class file (CAFEBABE, version 61)', padded(bytes([0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 61])), 'executable'],
    ['#!/bin/sh', enc('#!/bin/sh\necho hello\n'), 'shell script'],
    ['#!/usr/bin/env python3', enc('#!/usr/bin/env python3\nprint(1)\n'), 'shell script'],
    ['shebang after a UTF-8 BOM', bytes(UTF8_BOM, '#!/bin/bash\nrm -rf /tmp/x\n'), 'shell script'],
    ['HTML with BOM and leading whitespace', bytes(UTF8_BOM, ' \r\n\t <!DOCTYPE html>\n<html><body>hi</body></html>'), 'html'],
    ['HTML doctype, lower case', enc('<!doctype html><title>x</title>'), 'html'],
    ['<html>', enc('<html>'), 'html'],
    ['<HTML lang=en> upper case', enc('<HTML lang="en"><BODY>'), 'html'],
    ['<head>', enc('\n\n<head><meta charset=utf-8>'), 'html'],
    ['<body onload>', enc('<body onload="alert(1)">'), 'html'],
    ['<script>', enc('<script>alert(document.cookie)</script>'), 'html'],
    ['<iframe>', enc('<iframe src="https://example.com"></iframe>'), 'html'],
    ['<p>', enc('<p>hello'), 'html'],
    ['<a href>', enc('<a href="javascript:alert(1)">x</a>'), 'html'],
    ['<b> cut off by the end of the head', enc('<b'), 'html'],
    ['<div/>', enc('<div/>'), 'html'],
    ['<!-- comment --> then <html>', enc('<!-- saved from url=(0014)about:internet -->\n<html>'), 'html'],
    ['<!-- comment --> then <script> later', enc('<!-- x -->\n<foo>text</foo><script>alert(1)</script>'), 'html'],
    ['unterminated comment, then <script>', enc('<!-- <script>alert(1)</script>'), 'html'],
    ['HTML in UTF-16LE with BOM', utf16le('  <html><script>alert(1)</script>'), 'html'],
    ['HTML in UTF-16BE with BOM', utf16be('<!DOCTYPE html>'), 'html'],
    ['XHTML after the XML declaration', enc('<?xml version="1.0"?>\n<html xmlns="http://www.w3.org/1999/xhtml"><body/></html>'), 'html'],
    ['XHTML-namespaced script in XML', enc('<?xml version="1.0"?><root><x:script xmlns:x="http://www.w3.org/1999/xhtml">alert(1)</x:script></root>'), 'html'],
    ['XHTML doctype', enc('<?xml version="1.0"?>\n<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" "x">'), 'html'],
    ['<svg> named as PNG', enc('<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>'), 'svg'],
    ['<SVG> upper case', enc('<SVG>'), 'svg'],
    ['SVG after XML declaration, comment and doctype', enc('<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n<!-- Generator: Adobe Illustrator -->\n<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">\n<svg version="1.1">'), 'svg'],
    ['SVG after XML declaration', enc('<?xml version="1.0"?>\n<svg width="10" height="10"></svg>'), 'svg'],
    ['SVG nested in another XML element', enc('<?xml version="1.0"?><doc><svg/></doc>'), 'svg'],
    ['prefixed SVG root', enc('<s:svg xmlns:s="http://www.w3.org/2000/svg"/>'), 'svg'],
    ['SVG in UTF-16LE', utf16le('<?xml version="1.0" encoding="UTF-16"?><svg/>'), 'svg'],
    ["'use strict'", enc("'use strict';\nconsole.log(1);\n"), 'javascript'],
    ['"use strict"', enc('"use strict"\nfoo()'), 'javascript'],
    ['import default', enc("import express from 'express';\n"), 'javascript'],
    ['import named', enc("import { readFile } from 'node:fs';"), 'javascript'],
    ['import namespace', enc("import * as fs from 'node:fs';"), 'javascript'],
    ['import side effect', enc("import './polyfill.js';"), 'javascript'],
    ['export default', enc('export default { a: 1 };'), 'javascript'],
    ['export const', enc('export const x = 1;'), 'javascript'],
    ['export braces', enc('export { a, b };'), 'javascript'],
    ['function declaration', enc('function main(argv) {\n  return 0;\n}'), 'javascript'],
    ['async function', enc('async function run() {}'), 'javascript'],
    ['IIFE', enc('(function () { alert(1) })();'), 'javascript'],
    ['!function', enc('!function(e){var t={};}([]);'), 'javascript'],
    ['arrow IIFE after a banner comment', enc('/*! bundle v1.0 | MIT */\n(()=>{"use strict";var e={}})();'), 'javascript'],
    ['var', enc('var a = 1;'), 'javascript'],
    ['let', enc('let counter = 0;'), 'javascript'],
    ['const destructuring after line comments', enc('// config loader\n// (c) 2024\nconst { join } = require("path");'), 'javascript'],
    ['class', enc('class Foo extends Bar {\n}'), 'javascript'],
    ['window.', enc('window.location = "https://evil.example";'), 'javascript'],
    ['document.', enc("document.write('<b>x</b>');"), 'javascript'],
    ['module.exports', enc('module.exports = { a: 1 };'), 'javascript'],
    ['exports.x', enc('exports.handler = async () => {};'), 'javascript'],
    ['require(', enc("require('child_process').exec('id');"), 'javascript'],
    ['script with a UTF-8 BOM', bytes(UTF8_BOM, 'var x = 1;'), 'javascript'],
  ];
  for (const [name, content, reason] of cases) {
    t.same(sniffContent(content), { contentType: null, blocked: reason }, name);
    // The name and declared type claim an image; only the content check catches it.
    t.equal(checkNameAndType('screenshot.png', 'image/png'), null, `${name}: the name and type alone pass`);
  }
  t.end();
});

t.test('labelled and not blocked', (t) => {
  const cases: [string, Buffer, string | null][] = [
    ['PNG', padded(bytes([0x89], 'PNG', [0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d], 'IHDR')), 'image/png'],
    ['JPEG', padded(bytes([0xff, 0xd8, 0xff, 0xe0, 0, 0x10], 'JFIF', [0])), 'image/jpeg'],
    ['GIF87a', padded(bytes('GIF87a', [1, 0, 1, 0])), 'image/gif'],
    ['GIF89a', padded(bytes('GIF89a', [1, 0, 1, 0])), 'image/gif'],
    ['WebP', riff('WEBP'), 'image/webp'],
    ['BMP', bmp(), 'image/bmp'],
    ['ICO', padded(bytes([0, 0, 1, 0, 1, 0, 16, 16])), 'image/x-icon'],
    ['TIFF little-endian', padded(bytes('II', [0x2a, 0, 8, 0, 0, 0])), 'image/tiff'],
    ['TIFF big-endian', padded(bytes('MM', [0, 0x2a, 0, 0, 0, 8])), 'image/tiff'],
    ['AVIF', ftyp('avif', 'avif', 'mif1', 'miaf'), 'image/avif'],
    ['AVIF with generic major brand', ftyp('mif1', 'mif1', 'avif', 'miaf'), 'image/avif'],
    ['HEIC', ftyp('heic', 'mif1', 'heic'), 'image/heic'],
    ['MP4 (isom)', ftyp('isom', 'isom', 'iso2', 'avc1', 'mp41'), 'video/mp4'],
    ['MP4 (mp42)', ftyp('mp42', 'mp42', 'isom'), 'video/mp4'],
    ['MOV', ftyp('qt  ', 'qt  '), 'video/quicktime'],
    ['M4A', ftyp('M4A ', 'M4A ', 'mp42', 'isom'), 'audio/mp4'],
    ['WebM', padded(bytes([0x1a, 0x45, 0xdf, 0xa3, 0x9f, 0x42, 0x86, 0x81, 0x01, 0x42, 0x82, 0x84], 'webm')), 'video/webm'],
    ['Matroska', padded(bytes([0x1a, 0x45, 0xdf, 0xa3, 0xa3, 0x42, 0x86, 0x81, 0x01, 0x42, 0x82, 0x88], 'matroska')), 'video/x-matroska'],
    ['AVI', riff('AVI '), 'video/x-msvideo'],
    ['WAV', riff('WAVE'), 'audio/wav'],
    ['MP3 with ID3', padded(bytes('ID3', [4, 0, 0, 0, 0, 0x10, 0x00])), 'audio/mpeg'],
    ['MP3 frame without tag', padded(bytes([0xff, 0xfb, 0x90, 0x64])), 'audio/mpeg'],
    ['OGG', padded(bytes('OggS', [0, 2, 0, 0])), 'audio/ogg'],
    ['FLAC', padded(bytes('fLaC', [0, 0, 0, 0x22])), 'audio/flac'],
    ['PDF', enc('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n'), 'application/pdf'],
    ['ZIP (also docx/xlsx/jar)', padded(bytes('PK', [3, 4, 20, 0, 0, 0, 8, 0])), 'application/zip'],
    ['empty ZIP', padded(bytes('PK', [5, 6]), 22), 'application/zip'],
    ['GZIP', padded(bytes([0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 3])), 'application/gzip'],
    ['7z', padded(bytes([0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c, 0, 4])), 'application/x-7z-compressed'],
    ['RAR 4', padded(bytes('Rar!', [0x1a, 0x07, 0x00])), 'application/vnd.rar'],
    ['RAR 5', padded(bytes('Rar!', [0x1a, 0x07, 0x01, 0x00])), 'application/vnd.rar'],
    ['server log', enc('2024-05-01 12:00:00.123 INFO  [main] Server started on port 27015\n2024-05-01 12:00:01.001 WARN  [net] slow tick\n'), 'text/plain; charset=utf-8'],
    ['log mentioning function mid-text', enc('2024-05-01 12:00:00 ERROR exception in function handleUpload(req) { at line 12 }\nconst value = 3; var x = 1; window.alert(1)\n'), 'text/plain; charset=utf-8'],
    ['log with [LEVEL] prefix', enc('[INFO] Loading world "survival"...\n[WARN] Can\'t keep up!\n'), 'text/plain; charset=utf-8'],
    ['log starting with a [date]', enc('[2024-05-01 12:00:00] player joined\n'), 'text/plain; charset=utf-8'],
    ['log mentioning <script> and <svg> mid-text', enc('blocked request: GET /?q=<script>alert(1)</script> and <svg onload=x>\n'), 'text/plain; charset=utf-8'],
    ['prose starting with "import"', enc('import the data from the old server before Friday.\n'), 'text/plain; charset=utf-8'],
    ['prose starting with "let"', enc('let me know, thanks\n'), 'text/plain; charset=utf-8'],
    ['prose starting with "function"', enc('function (n.): an activity that is natural to a thing\n'), 'text/plain; charset=utf-8'],
    ['prose starting with "(function"', enc('(function of the server: host matches)\n'), 'text/plain; charset=utf-8'],
    ['prose starting with "document."', enc('document.pdf (second copy)\n'), 'text/plain; charset=utf-8'],
    ['prose starting with "export"', enc('exported 12 maps\n'), 'text/plain; charset=utf-8'],
    ['text starting with MZ', enc('MZ-series notes\n'), 'text/plain; charset=utf-8'],
    ['text starting with BM', enc('BM notes: a long line of text here\n'), 'text/plain; charset=utf-8'],
    ['text starting with ID3', enc('ID3 tags are metadata\n'), 'text/plain; charset=utf-8'],
    ['UTF-8 text with BOM', Buffer.concat([Buffer.from(UTF8_BOM), enc('Grüße, 世界 🎮\n')]), 'text/plain; charset=utf-8'],
    ['UTF-16LE text starting with a space (FF FE 20 00 is no MPEG frame)', utf16le(' hello'), null],
    ['MPEG Layer I-looking bytes', padded(bytes([0xff, 0xfe, 0x90, 0x64])), null],
    ['text with tabs, CR and form feed', enc('a\tb\r\nc\fd'), 'text/plain; charset=utf-8'],
    ['whitespace only', enc(' \n'), 'text/plain; charset=utf-8'],
    ['XML config', enc('<?xml version="1.0"?>\n<config><name>server</name></config>'), 'text/plain; charset=utf-8'],
    ['XML with a leading comment', enc('<!-- settings -->\n<config><port>27015</port></config>'), 'text/plain; charset=utf-8'],
    ['OPML-like XML with head/body below the root', enc('<?xml version="1.0"?><opml version="2.0"><head><title>x</title></head><body/></opml>'), 'text/plain; charset=utf-8'],
    ['multi-byte character cut off by the end of the head', Buffer.concat([Buffer.alloc(MAX_SNIFF_BYTES - 1, 'a'), enc('é').subarray(0, 1)]), 'text/plain; charset=utf-8'],
    ['only the first MAX_SNIFF_BYTES count', Buffer.concat([Buffer.alloc(MAX_SNIFF_BYTES, 'a'), Buffer.from([0, 1, 2])]), 'text/plain; charset=utf-8'],
    ['JSON object', json({ name: 'map', players: [1, 2, 3], ok: true, none: null, n: -1.5e3 }), 'application/json'],
    ['JSON array', enc('[1, 2, 3]'), 'application/json'],
    ['empty JSON object', enc('  {}\n'), 'application/json'],
    ['JSON cut off by the end of the head', Buffer.concat([enc('{"items": ['), enc('{"id": 123456, "name": "abc\\u00e9"},'.repeat(200))]).subarray(0, MAX_SNIFF_BYTES), 'application/json'],
    ['JSON cut off inside a number', enc('[1, 2.'), 'application/json'],
    ['JSON cut off inside a literal', enc('[tr'), 'application/json'],
    ['JSON Lines are text, not JSON', enc('{"level":"info","msg":"a"}\n{"level":"warn","msg":"b"}\n'), 'text/plain; charset=utf-8'],
    ['invalid JSON starting with {', enc('{ not json }'), 'text/plain; charset=utf-8'],
    ['text with ANSI colour codes (ESC)', enc('\u001b[32mINFO\u001b[0m started\n'), null],
    ['text with NUL', enc('abc\u0000def'), null],
    ['text with DEL', enc('abc\u007f'), null],
    ['text with a C1 control', enc('abc\u0085def'), null],
    ['invalid UTF-8', bytes('abc', [0xc3, 0x28]), null],
    ['overlong UTF-8', bytes([0xc0, 0xaf]), null],
    ['UTF-16 text (not sniffed as text)', utf16le('hello world'), null],
    ['unknown binary', Buffer.from([0x00, 0x01, 0x02, 0x03, 0x10, 0x20, 0x80, 0xff]), null],
    ['empty', Buffer.alloc(0), null],
  ];
  for (const [name, content, type] of cases) {
    t.same(sniffContent(content), { contentType: type, blocked: null }, name);
  }
  t.end();
});

t.test('ASCII text: every byte below 0x80 that is a control other than tab, newline, form feed or carriage return makes it not text', (t) => {
  const allowedControls = new Set([0x09, 0x0a, 0x0c, 0x0d]);
  const wrong: number[] = [];
  for (let byte = 0; byte < 0x80; byte++) {
    const isText = (byte >= 0x20 && byte < 0x7f) || allowedControls.has(byte);
    const { contentType } = sniffContent(Buffer.concat([enc('a line of a log '), Buffer.from([byte]), enc(' and the rest\n')]));
    if ((contentType === 'text/plain; charset=utf-8') !== isText) wrong.push(byte);
  }
  t.same(wrong, [], 'no byte judged otherwise than its class');
  t.end();
});

t.test('checkNameAndType blocks by name or declared type alone', (t) => {
  const blockedNames: [string, string][] = [
    ['index.html', 'html'],
    ['INDEX.HTM', 'html'],
    ['page.xhtml', 'html'],
    ['page.xht', 'html'],
    ['page.shtml', 'html'],
    ['archive.mhtml', 'html'],
    ['trailing-dot.html.', 'html'],
    ['trailing-dots-and-blanks.html . .', 'html'],
    ['ads.html::$DATA', 'html'],
    ['dir/sub\\page.html', 'html'],
    ['image.svg', 'svg'],
    ['image.SVGZ', 'svg'],
    ['app.js', 'javascript'],
    ['app.mjs', 'javascript'],
    ['app.cjs', 'javascript'],
    ['component.jsx', 'javascript'],
    ['photo.png.js', 'javascript'],
    ['run.sh', 'shell script'],
    ['run.bash', 'shell script'],
    ['run.zsh', 'shell script'],
    ['run.csh', 'shell script'],
    ['run.ksh', 'shell script'],
    ['start.bat', 'shell script'],
    ['start.cmd', 'shell script'],
    ['setup.ps1', 'shell script'],
    ['setup.exe', 'executable'],
    ['lib.dll', 'executable'],
    ['prog.com', 'executable'],
    ['saver.scr', 'executable'],
    ['install.msi', 'executable'],
    ['script.vbs', 'executable'],
    ['job.wsf', 'executable'],
    ['app.hta', 'executable'],
    ['binary.elf', 'executable'],
    ['libfoo.so', 'executable'],
    ['libfoo.dylib', 'executable'],
    ['Thing.app', 'executable'],
    ['plugin.jar', 'executable'],
    ['game.apk', 'executable'],
    ['Main.class', 'executable'],
  ];
  for (const [name, reason] of blockedNames) t.equal(checkNameAndType(name, null), reason, name);

  const blockedTypes: [string, string][] = [
    ['text/html', 'html'],
    ['TEXT/HTML; charset=utf-8', 'html'],
    ['application/xhtml+xml', 'html'],
    ['image/svg+xml', 'svg'],
    ['text/javascript', 'javascript'],
    ['application/javascript', 'javascript'],
    ['application/x-javascript', 'javascript'],
    ['application/ecmascript', 'javascript'],
    ['text/ecmascript', 'javascript'],
    ['application/x-msdownload', 'executable'],
    ['application/x-msdos-program', 'executable'],
    ['application/x-executable', 'executable'],
    ['application/x-elf', 'executable'],
    ['application/x-mach-binary', 'executable'],
    ['application/hta', 'executable'],
    ['application/java-archive', 'executable'],
    ['application/x-sh', 'shell script'],
    ['application/x-shellscript', 'shell script'],
    ['text/x-shellscript', 'shell script'],
    ['application/x-csh', 'shell script'],
    ['application/x-bat', 'shell script'],
  ];
  for (const [type, reason] of blockedTypes) t.equal(checkNameAndType('upload.png', type), reason, type);

  const allowed: [string, string | null][] = [
    ['screenshot.png', 'image/png'],
    ['clip.ts', 'video/mp2t'],
    ['clip.TS', null],
    ['page.html.png', 'image/png'],
    ['server.log', 'text/plain'],
    ['data.json', 'application/json'],
    ['notes.txt', null],
    ['README', null],
    ['archive.tar.gz', 'application/gzip'],
    ['config.xml', 'text/xml'],
    ['demo.dem', 'application/octet-stream'],
    ['html', null],
    ['.htaccess', null],
    ['photo.jpg', ''],
    ['photo.jpg', '   '],
  ];
  for (const [name, type] of allowed) t.equal(checkNameAndType(name, type), null, `${name} as ${type}`);
  t.end();
});

t.test('checkNameAndType blocks launchers, scripts and macro documents that run when opened (issue 17.2)', (t) => {
  const blocked: Record<string, string> = {
    shortcut: 'url website lnk library-ms searchconnector-ms appref-ms settingcontent-ms desktop scf webloc inetloc fileloc',
    executable: 'msix msixbundle appx appxbundle appinstaller application xbap reg cpl msc jar jnlp gadget xll wsc sct pkg',
    'shell script': 'ps1 psm1 psd1 ps1xml psc1 command tool',
    script: 'py pyz pyw pyzw pyc pyo pl rb rbw php phtml phar php5 au3 ahk',
    'macro document': 'docm dotm xlsm xltm xlam xla pptm potm ppam ppsm sldm',
    html: 'chm',
  };
  for (const [reason, extensions] of Object.entries(blocked)) {
    for (const extension of extensions.split(' ')) {
      t.equal(checkNameAndType(`invoice.${extension}`, null), reason, `.${extension}`);
      t.equal(checkNameAndType(`INVOICE.${extension.toUpperCase()}. `, 'image/png'), reason, `.${extension} in upper case with a trailing dot`);
    }
  }
  const blockedTypes: [string, string][] = [
    ['application/vnd.ms-excel.sheet.macroEnabled.12', 'macro document'],
    ['application/vnd.ms-word.document.macroEnabled.12', 'macro document'],
    ['application/vnd.ms-powerpoint.presentation.macroEnabled.12', 'macro document'],
    ['text/x-python', 'script'],
    ['application/x-httpd-php', 'script'],
    ['application/x-mswinurl', 'shortcut'],
    ['application/x-desktop', 'shortcut'],
    ['application/msix', 'executable'],
    ['application/vnd.ms-htmlhelp', 'html'],
  ];
  for (const [type, reason] of blockedTypes) t.equal(checkNameAndType('upload.bin', type), reason, type);
  // Look-alikes that stay allowed: the blocked part is not the last extension, or it is an everyday type.
  for (const name of ['notes.url.txt', 'report.docx', 'sheet.xlsx', 'slides.pptx', 'old.doc', 'budget.xls', 'desktop.png', 'python.log', 'screenshot.py.png']) {
    t.equal(checkNameAndType(name, null), null, `${name} passes`);
  }
  t.end();
});

t.test('resolveContentType', (t) => {
  const cases: [string | null, string | null, string, string][] = [
    // The sniffed type wins.
    ['image/png', 'text/plain', 'a.txt', 'image/png'],
    ['text/plain; charset=utf-8', 'image/png', 'a.png', 'text/plain; charset=utf-8'],
    ['application/json', null, 'a.txt', 'application/json'],
    // Then a servable declared type, without parameters.
    [null, 'image/png', 'a.bin', 'image/png'],
    [null, 'Image/PNG; foo=bar', 'x', 'image/png'],
    [null, 'video/mp4', 'clip', 'video/mp4'],
    [null, 'text/plain', 'x', 'text/plain'],
    [null, 'application/vnd.ms-excel', 'x', 'application/vnd.ms-excel'],
    // Declared types that are not servable fall through to the extension table.
    [null, 'application/octet-stream', 'a.log', 'text/plain; charset=utf-8'],
    [null, 'text/html', 'a.txt', 'text/plain; charset=utf-8'],
    [null, 'image/svg+xml', 'a.png', 'image/png'],
    [null, 'application/javascript', 'a.json', 'application/json'],
    [null, 'text/xml', 'a.xml', 'application/octet-stream'],
    [null, 'application/xml', 'a.xml', 'application/octet-stream'],
    [null, 'application/rss+xml', 'feed', 'application/octet-stream'],
    [null, 'multipart/form-data', 'a.bin', 'application/octet-stream'],
    [null, 'not a type', 'a.csv', 'text/csv; charset=utf-8'],
    [null, 'image/', 'a.gif', 'image/gif'],
    [null, 'image/png<script>', 'x', 'application/octet-stream'],
    [null, '', 'a.JPG', 'image/jpeg'],
    // Then the extension table, then octet-stream.
    [null, null, 'a.JPG', 'image/jpeg'],
    [null, null, 'clip.ts', 'video/mp2t'],
    [null, null, 'clip.webm', 'video/webm'],
    [null, null, 'server.log.', 'text/plain; charset=utf-8'],
    [null, null, 'README', 'application/octet-stream'],
    [null, null, 'x.html', 'application/octet-stream'],
    [null, null, 'x.svg', 'application/octet-stream'],
    [null, null, 'demo.dem', 'application/octet-stream'],
    // Never an active type, even when handed one as "sniffed".
    ['text/html', null, 'a.txt', 'text/plain; charset=utf-8'],
    ['image/svg+xml', 'image/png', 'a.png', 'image/png'],
  ];
  for (const [sniffed, declared, name, expected] of cases) {
    t.equal(resolveContentType(sniffed, declared, name), expected, `${sniffed} / ${declared} / ${name}`);
  }
  t.end();
});

t.test('sniff and resolve together: a disguised file is stored as what it is', (t) => {
  const png = padded(bytes([0x89], 'PNG', [0x0d, 0x0a, 0x1a, 0x0a]));
  t.equal(resolveContentType(sniffContent(png).contentType, 'text/plain', 'notes.txt'), 'image/png');
  const log = enc('2024-05-01 started\n');
  t.equal(resolveContentType(sniffContent(log).contentType, 'image/png', 'shot.png'), 'text/plain; charset=utf-8');
  const ansiLog = enc('\u001b[1mbold\u001b[0m\n');
  t.equal(resolveContentType(sniffContent(ansiLog).contentType, 'application/octet-stream', 'console.log'), 'text/plain; charset=utf-8');
  t.end();
});
