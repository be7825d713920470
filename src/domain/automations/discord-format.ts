import { EventKind, TEST_EVENT_KIND } from './event-kinds.ts';
import type { EventPayload, MediaRecord } from './payload.ts';

/**
 * A `discord` target receives a Discord webhook message
 * (https://discord.com/developers/docs/resources/webhook#execute-webhook)
 * instead of the event JSON: a line of content and one embed with the file's
 * public link, or a note that the file is private. Mentions are disabled
 * (`allowed_mentions: { parse: [] }`), user text is escaped, and every text
 * is cut to Discord's limits.
 */

const LIMITS = { content: 2000, title: 256, description: 4096, fieldValue: 1024, footer: 2048 };
/** Discord's blurple. */
const EMBED_COLOR = 0x5865f2;
const PRIVATE_NOTE = 'This file is private: no public link. Team members open it in the media library (links to private files are signed and expire).';

export interface DiscordMessage {
  content: string;
  embeds: DiscordEmbed[];
  allowed_mentions: { parse: string[] };
}

export interface DiscordEmbed {
  title: string;
  description: string;
  url?: string;
  color: number;
  timestamp: string;
  fields: { name: string; value: string; inline?: boolean }[];
  image?: { url: string };
  footer: { text: string };
}

function cut(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit - 1)}…`;
}

/** Escapes Discord markdown so a file name renders as typed. */
export function escapeMarkdown(text: string): string {
  return text.replace(/[\\*_~`|\[\]()]/g, (character) => `\\${character}`);
}

/** 1234567 → "1.2 MB" (decimal units, as the spec's MB). */
export function formatSize(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`;
  const units = ['kB', 'MB', 'GB', 'TB'];
  let value = bytes;
  let unit = -1;
  do {
    value /= 1000;
    unit++;
  } while (value >= 1000 && unit < units.length - 1);
  return `${value >= 100 ? Math.round(value) : value.toFixed(1)} ${units[unit]}`;
}

function mediaMessage(payload: EventPayload, media: MediaRecord): DiscordMessage {
  const name = media.fileName || media.id;
  const fields = [
    { name: 'Size', value: formatSize(media.size), inline: true },
    { name: 'Type', value: cut(media.contentType, LIMITS.fieldValue), inline: true },
    { name: 'Visibility', value: media.publicUrl ? 'public' : 'private', inline: true },
  ];
  if (media.tags.length > 0) fields.push({ name: 'Tags', value: cut(media.tags.map((tag) => `\`${tag}\``).join(' '), LIMITS.fieldValue), inline: false });
  const embed: DiscordEmbed = {
    title: cut(name, LIMITS.title),
    description: media.publicUrl ? cut(media.publicUrl, LIMITS.description) : PRIVATE_NOTE,
    color: EMBED_COLOR,
    timestamp: payload.occurredAt,
    fields,
    footer: { text: cut(`${payload.kind} · ${payload.id}`, LIMITS.footer) },
  };
  if (media.publicUrl) {
    embed.url = media.publicUrl;
    if (media.contentType.startsWith('image/')) embed.image = { url: media.publicUrl };
  }
  return {
    content: cut(`New upload: **${escapeMarkdown(name)}**`, LIMITS.content),
    embeds: [embed],
    allowed_mentions: { parse: [] },
  };
}

/** The Discord message for an event; kinds without their own format get a one-line summary. */
export function discordMessage(payload: EventPayload): DiscordMessage {
  const media = payload.data['media'] as MediaRecord | null | undefined;
  if (payload.kind === EventKind.mediaUploaded && media) return mediaMessage(payload, media);
  if (payload.kind === TEST_EVENT_KIND) {
    const automation = payload.data['automation'] as { name?: unknown } | undefined;
    const name = typeof automation?.name === 'string' ? automation.name : '';
    return {
      content: cut(`Test message for the automation **${escapeMarkdown(name)}**: this channel receives the team's events.`, LIMITS.content),
      embeds: [],
      allowed_mentions: { parse: [] },
    };
  }
  return {
    content: cut(`Event \`${payload.kind}\` (${payload.id})`, LIMITS.content),
    embeds: [],
    allowed_mentions: { parse: [] },
  };
}
