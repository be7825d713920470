import { z } from 'zod';
import { DELIVERY_STATUSES } from '../../domain/notifications/delivery-status.ts';
import { deliveryListQuerySchema } from '../../domain/notifications/delivery-list.ts';
import { NOTIFICATION_PROVIDERS } from '../../domain/notifications/notification-deliveries.ts';
import { NOTIFICATION_CHANNELS, NOTIFICATION_TOPICS } from '../../domain/notifications/notification-preference.service.ts';
import type { OperationDoc } from './operation-doc.ts';

/** A user's notification deliveries (spec 2.9) and a member's Discord status (spec 2.8); docs/workspace.md. */

const timestamp = z.iso.datetime();

export const notificationDeliverySchema = z
  .object({
    id: z.uuid(),
    userId: z.uuid(),
    topic: z.enum(NOTIFICATION_TOPICS),
    channel: z.enum(NOTIFICATION_CHANNELS),
    provider: z.enum(NOTIFICATION_PROVIDERS).meta({ description: 'For mail: MAIL_PROVIDER, the service behind SMTP_URL (SES unless set).' }),
    status: z.enum(DELIVERY_STATUSES).meta({
      description: 'QUEUED → SENT (the SMTP server accepted it) or FAILED (refused, or out of attempts); SUPPRESSED: never sent (the user\'s preferences). '
        + 'DELIVERED needs a provider receipt, which SMTP does not give: mail stays SENT.',
    }),
    createdAt: timestamp,
    updatedAt: timestamp,
    providerMessageId: z.string().nullable().meta({ description: 'The Message-ID the SMTP server accepted the mail under.' }),
    errorCode: z.string().nullable().meta({ description: '`SMTP_<reply code>`, a connection error code (ECONNECTION, ...), or RETRIES_EXHAUSTED.' }),
    errorMessage: z.string().nullable().meta({ description: 'The server\'s answer, addresses masked.' }),
    metadata: z.record(z.string(), z.unknown()).nullable().meta({ description: 'What the message was about (`kind`, `subject`); never its text, token or link.' }),
    destinationHash: z.string().nullable().meta({ description: 'SHA-256 (hex) of the lower-cased address; never the address.' }),
    retentionUntil: timestamp.nullable().meta({ description: 'When it is deleted (NOTIFICATION_RETENTION_DAYS after it was written); not listed after.' }),
  })
  .meta({ id: 'NotificationDelivery' });

export const notificationDeliveryListSchema = z
  .object({
    items: z.array(notificationDeliverySchema),
    nextCursor: z.string().nullable().meta({ description: 'Pass as `cursor` for the next page; null on the last page. Opaque.' }),
  })
  .meta({ id: 'NotificationDeliveryList' });

export const discordMemberStatusSchema = z
  .object({
    hasDiscordConnection: z.boolean().meta({ description: 'Whether the member\'s user has a linked Discord account.' }),
    userId: z.uuid().nullable(),
    member: z
      .object({
        isMember: z.boolean(),
        id: z.string().meta({ description: 'The Discord user id.' }),
        username: z.string(),
        globalName: z.string().nullable(),
        displayName: z.string(),
        nick: z.string().nullable(),
        joinedAt: timestamp.nullable(),
        roles: z.array(z.object({ id: z.string(), name: z.string().nullable().meta({ description: 'Null: Discord names a member\'s roles by id only.' }) })),
      })
      .nullable()
      .meta({ description: 'The membership of the OAUTH_DISCORD_GUILD_ID guild as the member\'s last Discord sign-in read it; null while unknown (no guild configured, no sign-in since, or Discord did not answer).' }),
  })
  .meta({ id: 'DiscordMemberStatus' });

export const notificationOperations: Record<string, OperationDoc> = {
  'GET /v1/users/me/notifications/deliveries': {
    operationId: 'listNotificationDeliveries',
    summary: 'What became of the notifications sent to the user',
    description: 'Newest first (by createdAt, then id), a page of `limit` at a time; `nextCursor` fetches the next. Deliveries past their retentionUntil are not listed.',
    tag: 'users',
    access: 'sessionToken',
    query: deliveryListQuerySchema,
    responses: { 200: { description: 'One page.', schema: notificationDeliveryListSchema } },
    errors: { 400: 'A limit outside 1-100, or a cursor that is not a nextCursor of this list.' },
  },
  'GET /v1/teams/:teamId/members/:memberId/discord': {
    operationId: 'getTeamMemberDiscordStatus',
    summary: 'A member\'s Discord status',
    description: 'Needs `team.members.view`. A key with scope media:upload gets 403. From what the service holds (never a call to Discord).',
    tag: 'members',
    access: 'teamApiKey',
    responses: { 200: { description: 'The status.', schema: discordMemberStatusSchema } },
    errors: { 404: 'No such member in the team.' },
  },
};
