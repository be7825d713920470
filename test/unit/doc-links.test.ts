// Every relative link in README.md and docs/*.md names a file that exists, and every #anchor a
// heading (or an explicit id) of the file it points into, with GitHub's heading ids.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import t from 'tap';

const repo = resolve(import.meta.dirname, '../..');
const documents = [join(repo, 'README.md'), ...readdirSync(join(repo, 'docs')).filter((name) => name.endsWith('.md')).map((name) => join(repo, 'docs', name))];

/** The text outside fenced code blocks and inline code spans, where links are links. */
export function proseOf(markdown: string): string {
  return markdown
    .replace(/^([ \t]*)(```|~~~)[^\n]*\n[\s\S]*?^\1\2[^\n]*$/gm, '')
    .replace(/(`+)[\s\S]*?\1/g, '');
}

/** Inline links `[text](target "title")`, images included, and reference definitions `[name]: target`. */
export function linksOf(markdown: string): string[] {
  const prose = proseOf(markdown);
  const inline = [...prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((match) => match[1]!);
  const references = [...prose.matchAll(/^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((match) => match[1]!);
  return [...inline, ...references];
}

/** GitHub's heading ids: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const match of markdown.replace(/^([ \t]*)(```|~~~)[^\n]*\n[\s\S]*?^\1\2[^\n]*$/gm, '').matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const text = match[1]!.replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/<[^>]+>/g, '');
    const base = text.toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  for (const match of markdown.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(match[1]!);
  return anchors;
}

t.test('the id rules', async (t) => {
  t.same([...anchorsOf('# API guide\n## List, filter and search\n### Multipart: `POST /upload/file`\n## Tests\n## Tests\n```\n# not a heading\n```\n')],
    ['api-guide', 'list-filter-and-search', 'multipart-post-uploadfile', 'tests', 'tests-1']);
  t.same(linksOf('See [a](a.md#x), ![i](img.png "t"), `[not](code.md)` and [web](https://example.com).\n\n[ref]: docs/b.md\n```\n[no](fenced.md)\n```\n'),
    ['a.md#x', 'img.png', 'https://example.com', 'docs/b.md']);
});

t.test('every relative link in README.md and docs/*.md resolves, anchors included', async (t) => {
  const broken: string[] = [];
  let checked = 0;
  for (const document of documents) {
    const from = relative(repo, document);
    for (const link of linksOf(readFileSync(document, 'utf8'))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // https:, mailto: and the like
      checked++;
      const [path = '', anchor] = link.split('#', 2);
      const target = path === '' ? document : resolve(dirname(document), decodeURIComponent(path));
      if (!target.startsWith(repo) || !existsSync(target)) {
        broken.push(`${from}: ${link} (no such file)`);
        continue;
      }
      if (anchor && target.endsWith('.md') && statSync(target).isFile() && !anchorsOf(readFileSync(target, 'utf8')).has(decodeURIComponent(anchor))) {
        broken.push(`${from}: ${link} (no heading #${anchor} in ${relative(repo, target)})`);
      }
    }
  }
  t.ok(checked > 50, `${checked} relative links checked`);
  t.same(broken, [], 'no broken link');
});
