import { PassThrough } from 'node:stream';
import t from 'tap';
import { LINE_EVERY, progressDisplay } from '../../src/storage-migration/progress-display.ts';

function capture(isTTY: boolean) {
  const out = Object.assign(new PassThrough(), { isTTY, columns: 100 });
  let text = '';
  out.on('data', (chunk) => (text += chunk));
  return { out, text: () => text };
}

t.test('without a terminal: a line at the start, one per LINE_EVERY objects and one at the end', (t) => {
  const { out, text } = capture(false);
  const progress = progressDisplay(out);
  progress.start(LINE_EVERY + 5, 3);
  for (let i = 0; i < LINE_EVERY + 2; i++) progress.advance(1024 * 1024);
  progress.end();
  t.same(text().split('\n').filter(Boolean), [
    `storage: ${LINE_EVERY + 5} objects to copy, 3 copied before`,
    `storage: ${LINE_EVERY}/${LINE_EVERY + 5} objects, ${(LINE_EVERY - 3).toFixed(1)} MiB copied`,
    `storage: ${LINE_EVERY + 5}/${LINE_EVERY + 5} objects, ${(LINE_EVERY + 2).toFixed(1)} MiB copied`,
  ]);
  t.end();
});

t.test('on a terminal: a bar redrawn in place, ending at the total', (t) => {
  const { out, text } = capture(true);
  const progress = progressDisplay(out);
  progress.start(4, 1);
  for (let i = 0; i < 3; i++) progress.advance(512 * 1024);
  progress.end();
  t.match(text(), /█+ 100% 4\/4 objects, 1\.5 MiB copied/);
  t.notMatch(text(), /^storage:/m, 'no plain lines');
  t.end();
});
