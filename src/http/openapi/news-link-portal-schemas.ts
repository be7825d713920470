import { z } from 'zod';
import { LINK_TYPES } from '../../domain/links/link.entity.ts';
import { BANNER_MESSAGE_TYPES, BANNER_TYPES } from '../../domain/news/news.entity.ts';
import { CUSTOM_DOMAIN_STATES } from '../../domain/portal/portal-environment.entity.ts';
import { groupSchema } from './schemas.ts';
import { memberShortSchema } from './team-schemas.ts';

/** Response bodies of the news, banner, link and portal routes (spec 2.16, 2.20). */

const id = z.uuid();
const timestamp = z.iso.datetime();

export const newsInfoSchema = z
  .object({
    id, teamId: id, creatorId: id.nullable(), title: z.string(), content: z.string().min(1), isImportant: z.boolean(), showOnDashboard: z.boolean(),
    isDraft: z.boolean(), publishedAt: timestamp.nullable().meta({ description: 'When it was published; null for a draft.' }),
    createdAt: timestamp, updatedAt: timestamp,
    groups: z.array(groupSchema).meta({ description: 'The groups it is for; empty: every member.' }),
    creator: memberShortSchema.nullable().meta({ description: 'Who wrote it; null for a member since deleted.' }),
  })
  .meta({ id: 'NewsInfo' });

export const newsListSchema = z.object({ data: z.array(newsInfoSchema), count: z.int().min(0) }).meta({ id: 'NewsList' });

export const teamNewsSchema = z
  .object({
    title: z.string(), type: z.enum(BANNER_TYPES), messageType: z.enum(BANNER_MESSAGE_TYPES),
    description: z.string().nullable(), language: z.string().nullable(),
    button: z.object({ text: z.string(), url: z.string() }).nullable(),
  })
  .meta({ id: 'TeamNews' });

export const linkSchema = z
  .object({
    id, teamId: id, title: z.string(), destination: z.string(), type: z.enum(LINK_TYPES), icon: z.string().nullable(), createdAt: timestamp, updatedAt: timestamp,
  })
  .meta({ id: 'Link' });

export const portalEnvironmentSchema = z
  .object({
    id, teamId: id, subdomain: z.string(), domainChangeCount: z.int().min(0), lastDomainChange: timestamp.nullable(), name: z.string(),
    customDomain: z.string().nullable().meta({ description: 'The custom domain set (pending or active); null when none is.' }),
    logoURL: z.string().nullable(), faviconURL: z.string().nullable(), language: z.string(),
    showApplyPanel: z.boolean(), showTeamOverview: z.boolean(), skipPortalPage: z.boolean(), createdAt: timestamp, updatedAt: timestamp,
  })
  .meta({ id: 'PortalEnvironment' });

export const customDomainStatusSchema = z
  .object({
    domain: z.string(),
    status: z.enum(CUSTOM_DOMAIN_STATES).meta({ description: 'Of spec 3.2\'s states this service uses pending, active and deleted.' }),
    validation_records: z.object({ txt_name: z.string(), txt_value: z.string() }).nullable().meta({ description: 'The TXT record to publish, while pending.' }),
    verification_errors: z.array(z.string()),
  })
  .meta({ id: 'CustomDomainStatus' });

export const domainUpdateSchema = z
  .object({
    portal: portalEnvironmentSchema,
    verification: z.object({ txtName: z.string().nullable(), txtValue: z.string().nullable() }).meta({ id: 'TxtVerification' }),
  })
  .meta({ id: 'PortalDomainUpdate' });

export const publicPortalSchema = z
  .object({
    subdomain: z.string(), customDomain: z.string().nullable().meta({ description: 'Only an active one.' }), name: z.string(),
    logoURL: z.string().nullable(), faviconURL: z.string().nullable(), language: z.string(),
    showApplyPanel: z.boolean(), showTeamOverview: z.boolean(), skipPortalPage: z.boolean(),
    team: z.object({ id, name: z.string(), logo: z.string().nullable() }),
  })
  .meta({ id: 'PublicPortal' });

export const portalTeamOverviewSchema = z
  .array(z.object({
    id, name: z.string(), image: z.string().nullable(),
    mainGroup: z.object({ id, name: z.string(), color: z.string(), sort: z.int() }).nullable(),
    sort: z.int(), isTeamOwner: z.boolean(), createdAt: timestamp,
  }))
  .meta({ id: 'PortalTeamOverview' });
