import type { MikroORM } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { badRequest } from '../../errors/errors.ts';
import { parseInput } from '../validation.ts';

export const NOTIFICATION_TOPICS = ['SYSTEM', 'PRODUCT_UPDATES', 'MARKETING'] as const;
export const NOTIFICATION_CHANNELS = ['EMAIL', 'DISCORD', 'PUSH'] as const;
export const NOTIFICATION_FREQUENCIES = ['INSTANT', 'DAILY', 'WEEKLY', 'MONTHLY', 'MUTE'] as const;

type Topic = (typeof NOTIFICATION_TOPICS)[number];
type Channel = (typeof NOTIFICATION_CHANNELS)[number];
export type NotificationTopic = Topic;
export type NotificationChannel = Channel;
type Frequency = (typeof NOTIFICATION_FREQUENCIES)[number];

export interface NotificationPreference {
  topic: Topic;
  channel: Channel;
  enabled: boolean;
  frequency: Frequency;
  confirmedAt: string | null;
}

export const updateNotificationSettingsSchema = z.strictObject({
  preferences: z
    .array(z.strictObject({
      topic: z.enum(NOTIFICATION_TOPICS),
      channel: z.enum(NOTIFICATION_CHANNELS),
      enabled: z.boolean().optional(),
      frequency: z.enum(NOTIFICATION_FREQUENCIES).optional(),
    }))
    .max(NOTIFICATION_TOPICS.length * NOTIFICATION_CHANNELS.length),
});

/** SYSTEM mail is how the service reaches a user about the account itself: it cannot be turned off. */
function isAlwaysOn(topic: Topic, channel: Channel): boolean {
  return topic === 'SYSTEM' && channel === 'EMAIL';
}

/** What a pair is before the user sets it: only operational mail is on; everything else waits for consent. */
function defaultOf(topic: Topic, channel: Channel): NotificationPreference {
  const frequency: Frequency = topic === 'SYSTEM' ? 'INSTANT' : topic === 'PRODUCT_UPDATES' ? 'WEEKLY' : 'MONTHLY';
  return { topic, channel, enabled: isAlwaysOn(topic, channel), frequency, confirmedAt: null };
}

interface PreferenceRow {
  topic: Topic;
  channel: Channel;
  enabled: boolean;
  frequency: Frequency;
  confirmed_at: Date | null;
}

/**
 * A user's notification preferences (spec 2.9): every topic on every channel, defaults for the
 * pairs never set. Turning a non-operational topic on is consent, recorded in `confirmedAt`
 * (the moment it was given; cleared when it is withdrawn).
 */
export class NotificationPreferenceService {
  private readonly orm: MikroORM;

  constructor(options: { orm: MikroORM }) {
    this.orm = options.orm;
  }

  async get(userId: string): Promise<{ preferences: NotificationPreference[] }> {
    const rows = await this.orm.em.getConnection().execute<PreferenceRow[]>(
      'select topic, channel, enabled, frequency, confirmed_at from notification_preference where user_id = ?', [userId],
    );
    const set = new Map(rows.map((row) => [`${row.topic}:${row.channel}`, row]));
    const preferences = NOTIFICATION_TOPICS.flatMap((topic) => NOTIFICATION_CHANNELS.map((channel) => {
      const row = set.get(`${topic}:${channel}`);
      return row
        ? { topic, channel, enabled: row.enabled, frequency: row.frequency, confirmedAt: row.confirmed_at ? new Date(row.confirmed_at).toISOString() : null }
        : defaultOf(topic, channel);
    }));
    return { preferences };
  }

  /**
   * Whether the user takes `topic` on `channel` now: on, not muted, and (for a topic that is not
   * operational) consented to. A message it refuses is not sent (its delivery is SUPPRESSED).
   */
  async allows(userId: string, topic: Topic, channel: Channel): Promise<boolean> {
    if (isAlwaysOn(topic, channel)) return true;
    const preference = (await this.get(userId)).preferences.find((one) => one.topic === topic && one.channel === channel)!;
    return preference.enabled && preference.frequency !== 'MUTE' && (topic === 'SYSTEM' || preference.confirmedAt !== null);
  }

  async update(userId: string, input: unknown): Promise<{ preferences: NotificationPreference[] }> {
    const { preferences } = parseInput(updateNotificationSettingsSchema, input);
    const seen = new Set<string>();
    preferences.forEach(({ topic, channel, enabled, frequency }, index) => {
      const pair = `${topic}:${channel}`;
      if (seen.has(pair)) throw badRequest(`preferences.${index}: ${topic} on ${channel} is given twice`, `preferences.${index}`);
      seen.add(pair);
      if (isAlwaysOn(topic, channel) && (enabled === false || frequency === 'MUTE')) {
        throw badRequest('SYSTEM notifications by EMAIL are operational and always on', `preferences.${index}`);
      }
    });
    const current = new Map((await this.get(userId)).preferences.map((preference) => [`${preference.topic}:${preference.channel}`, preference]));
    await this.orm.em.fork().transactional(async (em) => {
      for (const change of preferences) {
        const before = current.get(`${change.topic}:${change.channel}`)!;
        const enabled = change.enabled ?? before.enabled;
        // SYSTEM is operational on every channel: turning it on is no consent.
        const consented = enabled && change.topic !== 'SYSTEM';
        await em.execute(
          `insert into notification_preference (user_id, topic, channel, enabled, frequency, confirmed_at, updated_at)
           values (?, ?, ?, ?, ?, case when ? then now() end, now())
           on conflict (user_id, topic, channel) do update set
             enabled = excluded.enabled, frequency = excluded.frequency, updated_at = now(),
             -- consent keeps the moment it was first given until it is withdrawn
             confirmed_at = case when not excluded.enabled then null else coalesce(notification_preference.confirmed_at, excluded.confirmed_at) end`,
          [userId, change.topic, change.channel, enabled, change.frequency ?? before.frequency, consented],
        );
      }
    });
    return this.get(userId);
  }
}
