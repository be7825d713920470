import t from 'tap';
import { failureExcerpt } from '../test-files.ts';

const tap = `# Subtest: a group
    ok 1 - fine
    not ok 2 - should be equal
      ---
      found: 1
      wanted: 2
      at:
        fileName: test/integration/x.test.ts
      ...

    1..2
not ok 1 - a group # time=3ms
  ---
  at:
    fileName: test/integration/x.test.ts
  ...

ok 2 - another
1..2
`;

t.test('each failed assertion with its diagnostics, then the end of stderr', async (t) => {
  const excerpt = failureExcerpt(tap, 'line 1\nline 2\nError: boom\n', 25, 2);
  t.match(excerpt, /not ok 2 - should be equal\n\s+---\n\s+found: 1\n\s+wanted: 2/);
  t.match(excerpt, /not ok 1 - a group/);
  t.notMatch(excerpt, /ok 1 - fine|another/, 'passing lines left out');
  t.match(excerpt, /stderr \(last lines\):\n\s+line 2\n\s+Error: boom$/);
  t.notMatch(excerpt, /line 1/, 'only the last lines of stderr');
});

t.test('a long diagnostic is cut, and a file that printed nothing gives an empty excerpt', async (t) => {
  const long = `not ok 1 - x\n${Array.from({ length: 50 }, (_, i) => `  line ${i}`).join('\n')}\n`;
  t.equal(failureExcerpt(long, '', 5).split('\n').length, 6);
  t.equal(failureExcerpt('', ''), '');
});
