import t from 'tap';
import { discordMessage, escapeMarkdown, formatSize } from '../../src/domain/automations/discord-format.ts';
import { eventPayload, matchesAutomation, type AutomationFilter, type OutboxEvent } from '../../src/domain/automations/payload.ts';

const teamId = '11111111-1111-4111-8111-111111111111';
const folderA = 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa';
const folderChild = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc';

function event(media: Record<string, unknown>, overrides: Partial<OutboxEvent> = {}): OutboxEvent {
  return {
    id: 'eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee',
    teamId,
    kind: 'media.uploaded',
    occurredAt: new Date('2026-11-21T10:00:00.000Z'),
    payload: {
      media: {
        id: 'mmmmmmmm', path: `media/team/${teamId}/mmmmmmmm.png`, publicUrl: `https://cdn.example.com/media/team/${teamId}/mmmmmmmm.png`,
        public: true, folderId: null, tags: [], fileName: 'shot.png', size: 1234, contentType: 'image/png', hash: '0123456789abcdef',
        createdAt: '2026-11-21T10:00:00.000Z', updatedAt: '2026-11-21T10:00:00.000Z', ...media,
      },
    },
    ...overrides,
  };
}

function filter(overrides: Partial<AutomationFilter> = {}): AutomationFilter {
  return { teamId, eventKinds: ['media.uploaded'], folderId: null, includeSubfolders: false, tags: [], createdAt: new Date('2026-11-21T09:00:00.000Z'), ...overrides };
}

const ancestors = (folderId: string) => new Set(folderId === folderChild ? [folderChild, folderA] : [folderId]);

t.test('the payload: event id, kind, occurredAt, teamId and the media record', (t) => {
  t.same(eventPayload(event({})), {
    id: 'eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee',
    kind: 'media.uploaded',
    occurredAt: '2026-11-21T10:00:00.000Z',
    teamId,
    data: {
      media: {
        id: 'mmmmmmmm', fileName: 'shot.png', path: `media/team/${teamId}/mmmmmmmm.png`,
        publicUrl: `https://cdn.example.com/media/team/${teamId}/mmmmmmmm.png`, public: true, size: 1234, contentType: 'image/png',
        hash: '0123456789abcdef', folderId: null, tags: [], createdAt: '2026-11-21T10:00:00.000Z',
      },
    },
  });
  const hidden = eventPayload(event({ publicUrl: null, public: false, folderId: folderA, tags: ['a', 'b'] }));
  t.match(hidden.data['media'], { publicUrl: null, public: false, folderId: folderA, tags: ['a', 'b'] });
  t.same(eventPayload(event({}, { kind: 'team.log.API_KEY_CREATED', payload: { log: { action: 'API_KEY_CREATED' } } })).data, { log: { action: 'API_KEY_CREATED' } }, 'other kinds pass their payload through');
  t.end();
});

t.test('matching: kinds, team, creation time, folder (with or without subfolders) and tags (all of them)', (t) => {
  const plain = event({});
  t.ok(matchesAutomation(filter(), plain, ancestors));
  t.notOk(matchesAutomation(filter({ eventKinds: ['media.deleted'] }), plain, ancestors), 'another kind');
  t.notOk(matchesAutomation(filter({ teamId: '22222222-2222-4222-8222-222222222222' }), plain, ancestors), 'another team');
  t.notOk(matchesAutomation(filter({ createdAt: new Date('2026-11-21T10:00:00.001Z') }), plain, ancestors), 'created after the event');

  const inA = event({ folderId: folderA });
  const inChild = event({ folderId: folderChild });
  t.ok(matchesAutomation(filter({ folderId: folderA }), inA, ancestors));
  t.notOk(matchesAutomation(filter({ folderId: folderA }), inChild, ancestors), 'a subfolder only with includeSubfolders');
  t.ok(matchesAutomation(filter({ folderId: folderA, includeSubfolders: true }), inChild, ancestors));
  t.notOk(matchesAutomation(filter({ folderId: folderA }), plain, ancestors), 'no folder');
  t.notOk(matchesAutomation(filter({ folderId: folderChild, includeSubfolders: true }), inA, ancestors), 'a parent is not a subfolder');

  const tagged = event({ tags: ['map:dust', 'round:3', 'crash'] });
  t.ok(matchesAutomation(filter({ tags: ['crash'] }), tagged, ancestors));
  t.ok(matchesAutomation(filter({ tags: ['crash', 'map:dust'] }), tagged, ancestors));
  t.notOk(matchesAutomation(filter({ tags: ['crash', 'map:mirage'] }), tagged, ancestors), 'every tag must be there');
  t.notOk(matchesAutomation(filter({ tags: ['crash'] }), event({}, { kind: 'media.uploaded', payload: {} }), ancestors), 'no media record, no match');
  t.ok(matchesAutomation(filter({ eventKinds: ['team.log.X'] }), event({}, { kind: 'team.log.X', payload: {} }), ancestors), 'no filter: any kind subscribed to');
  t.end();
});

t.test('discord: content and an embed with the public link, or a note for a private file', (t) => {
  const shown = discordMessage(eventPayload(event({ fileName: 'big_*shot*.png', size: 2_500_000, tags: ['map:dust'] })));
  t.equal(shown.content, 'New upload: **big\\_\\*shot\\*.png**');
  t.same(shown.allowed_mentions, { parse: [] });
  t.equal(shown.embeds.length, 1);
  const [embed] = shown.embeds;
  t.equal(embed!.title, 'big_*shot*.png');
  t.equal(embed!.url, `https://cdn.example.com/media/team/${teamId}/mmmmmmmm.png`);
  t.same(embed!.image, { url: embed!.url });
  t.equal(embed!.timestamp, '2026-11-21T10:00:00.000Z');
  t.same(embed!.fields, [
    { name: 'Size', value: '2.5 MB', inline: true },
    { name: 'Type', value: 'image/png', inline: true },
    { name: 'Visibility', value: 'public', inline: true },
    { name: 'Tags', value: '`map:dust`', inline: false },
  ]);

  const hidden = discordMessage(eventPayload(event({ publicUrl: null, public: false, contentType: 'text/plain', fileName: 'server.log' })));
  t.equal(hidden.embeds[0]!.url, undefined);
  t.equal(hidden.embeds[0]!.image, undefined);
  t.match(hidden.embeds[0]!.description, /private/);
  t.notOk(JSON.stringify(hidden).includes('mmmmmmmm.png'), 'nothing that leads to the file');

  const pdf = discordMessage(eventPayload(event({ contentType: 'application/pdf' })));
  t.equal(pdf.embeds[0]!.image, undefined, 'only images are previewed');

  const long = discordMessage(eventPayload(event({ fileName: `${'x'.repeat(300)}.png` })));
  t.equal(long.embeds[0]!.title.length, 256, 'cut to the title limit');
  t.ok(long.content.length <= 2000);

  t.match(discordMessage(eventPayload(event({}, { kind: 'team.log.X', payload: {} }))), { content: /team\.log\.X/, embeds: [] });
  t.end();
});

t.test('formatSize and escapeMarkdown', (t) => {
  t.equal(formatSize(0), '0 B');
  t.equal(formatSize(999), '999 B');
  t.equal(formatSize(1000), '1.0 kB');
  t.equal(formatSize(123_456), '123 kB');
  t.equal(formatSize(250_000_000), '250 MB');
  t.equal(formatSize(1_500_000_000_000), '1.5 TB');
  t.equal(escapeMarkdown('a_b*c~d`e|f\\g[h](i)'), 'a\\_b\\*c\\~d\\`e\\|f\\\\g\\[h\\]\\(i\\)');
  t.equal(escapeMarkdown('plain-name.png'), 'plain-name.png');
  t.end();
});
