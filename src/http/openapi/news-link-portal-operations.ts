import { z } from 'zod';
import { createLinkSchema, updateLinkSchema } from '../../domain/links/link.service.ts';
import { bannerSchema } from '../../domain/news/news-banner.service.ts';
import { createNewsSchema, updateNewsSchema } from '../../domain/news/news.service.ts';
import { setDomainSchema } from '../../domain/portal/portal-domain.service.ts';
import { createPortalSchema, SUBDOMAIN_CHANGE_COOLDOWN_DAYS, updatePortalSchema } from '../../domain/portal/portal.service.ts';
import { JSON_BODY_ERRORS } from './common-errors.ts';
import {
  customDomainStatusSchema, domainUpdateSchema, linkSchema, newsInfoSchema, newsListSchema, portalEnvironmentSchema, portalTeamOverviewSchema, publicPortalSchema,
  teamNewsSchema,
} from './news-link-portal-schemas.ts';
import { rateLimitHeaders, type OperationDoc } from './operation-doc.ts';

/** News, the news banner, links and the portal (src/http/routes/teams/news-link-portal-routes.ts; docs/workspace.md). */

const base = '/v1/teams/:teamId';
const needs = (permission: string | null, more = '') =>
  `${permission ? `Needs \`${permission}\`.` : 'Any full key of the team.'} A key with scope media:upload gets 403.${more ? ` ${more}` : ''}`;
const flag = z.enum(['true', 'false']).optional();
const OWNER_ONLY = 'The team\'s owner only: a key acting as the owner, or the owner\'s own key or session (403 for anyone else).';

export function newsLinkPortalOperations(paging: z.ZodObject): Record<string, OperationDoc> {
  return {
    [`GET ${base}/news`]: {
      operationId: 'listNews', summary: 'News for the caller',
      description: needs(null, 'Editors (team.news.manage) see every item, drafts too; anyone else the published items for every member or for one of its groups. '
        + 'Drafts first, then newest published first.'),
      tag: 'news', access: 'teamApiKey',
      query: z.object({
        isDraft: flag.meta({ description: 'Only drafts (true) or only published items (false); a caller who is not an editor gets no drafts.' }),
        isImportant: flag, showOnDashboard: flag,
      }),
      headers: paging,
      responses: { 200: { description: 'One page of news.', schema: newsListSchema } },
      errors: { 400: 'Invalid filter or paging header.' },
    },
    [`POST ${base}/news`]: {
      operationId: 'createNews', summary: 'Write news (a draft unless isDraft is false)', description: needs('team.news.manage'),
      tag: 'news', access: 'teamApiKey',
      body: createNewsSchema.meta({ id: 'NewsCreateRequest' }), bodyRequired: true,
      responses: { 201: { description: 'Created.', schema: newsInfoSchema } },
      errors: { ...JSON_BODY_ERRORS, 402: 'Published at once past maxNews published items (error.teamLimits.maxNews).', 404: 'A group that is not the team\'s.' },
    },
    [`GET ${base}/news/:newsId`]: {
      operationId: 'getNews', summary: 'One news item', description: needs(null, 'A draft, or an item for groups the caller is not in, is 404 for anyone but editors.'),
      tag: 'news', access: 'teamApiKey',
      responses: { 200: { description: 'The item.', schema: newsInfoSchema } },
      errors: { 404: 'No such news item for the caller.' },
    },
    [`PATCH ${base}/news/:newsId`]: {
      operationId: 'updateNews', summary: 'Change news', description: needs('team.news.manage', 'groupIds replaces the targeting.'),
      tag: 'news', access: 'teamApiKey',
      body: updateNewsSchema.meta({ id: 'NewsUpdateRequest' }), bodyRequired: true,
      responses: { 200: { description: 'The item as it is now.', schema: newsInfoSchema } },
      errors: { ...JSON_BODY_ERRORS, 404: 'No such news item, or a group that is not the team\'s.' },
    },
    [`DELETE ${base}/news/:newsId`]: {
      operationId: 'deleteNews', summary: 'Delete news', description: needs('team.news.manage'), tag: 'news', access: 'teamApiKey',
      responses: { 204: { description: 'Deleted.' } },
      errors: { 404: 'No such news item.' },
    },
    [`POST ${base}/news/:newsId/publish`]: {
      operationId: 'publishNews', summary: 'Publish a draft', description: needs('team.news.manage', 'Counted against maxNews under the team\'s lock: exact across instances.'),
      tag: 'news', access: 'teamApiKey',
      responses: { 200: { description: 'Published.', schema: newsInfoSchema } },
      errors: { 402: 'The team has maxNews published items (error.teamLimits.maxNews).', 404: 'No such news item.', 409: 'It is published already.' },
    },
    [`POST ${base}/news/:newsId/unpublish`]: {
      operationId: 'unpublishNews', summary: 'Turn published news back into a draft', description: needs('team.news.manage', 'Frees its place under maxNews.'),
      tag: 'news', access: 'teamApiKey',
      responses: { 200: { description: 'A draft again.', schema: newsInfoSchema } },
      errors: { 404: 'No such news item.', 409: 'It is a draft already.' },
    },
    [`GET ${base}/news-banner`]: {
      operationId: 'getNewsBanner', summary: 'The team\'s news banner', description: needs(null), tag: 'news', access: 'teamApiKey',
      responses: { 200: { description: 'The banner.', schema: teamNewsSchema }, 204: { description: 'The team shows no banner.' } },
      errors: {},
    },
    [`PUT ${base}/news-banner`]: {
      operationId: 'setNewsBanner', summary: 'Set the team\'s news banner', description: `${OWNER_ONLY} button.url: an http(s) URL without credentials.`,
      tag: 'news', access: 'teamApiKey',
      body: bannerSchema.meta({ id: 'TeamNewsRequest' }), bodyRequired: true,
      responses: { 200: { description: 'The banner as it is now.', schema: teamNewsSchema } },
      errors: JSON_BODY_ERRORS,
    },
    [`DELETE ${base}/news-banner`]: {
      operationId: 'removeNewsBanner', summary: 'Remove the team\'s news banner', description: OWNER_ONLY, tag: 'news', access: 'teamApiKey',
      responses: { 204: { description: 'Removed (or there was none).' } },
      errors: {},
    },
    'PUT /v1/admin/teams/:teamId/news-banner': {
      operationId: 'setTeamNewsBannerAsOperator', summary: 'Set a team\'s news banner', description: 'Any team, archived ones too.', tag: 'operator', access: 'authSecret',
      body: bannerSchema, bodyRequired: true,
      responses: { 200: { description: 'The banner as it is now.', schema: teamNewsSchema } },
      errors: { ...JSON_BODY_ERRORS, 404: 'No such team.' },
    },
    'DELETE /v1/admin/teams/:teamId/news-banner': {
      operationId: 'removeTeamNewsBannerAsOperator', summary: 'Remove a team\'s news banner', tag: 'operator', access: 'authSecret',
      responses: { 204: { description: 'Removed (or there was none).' } },
      errors: { 404: 'No such team.' },
    },
    [`GET ${base}/links`]: {
      operationId: 'listLinks', summary: 'The team\'s links', description: needs(null, 'Oldest first.'), tag: 'links', access: 'teamApiKey',
      responses: { 200: { description: 'Every link.', schema: z.array(linkSchema).meta({ id: 'LinkList' }) } },
      errors: {},
    },
    [`POST ${base}/links`]: {
      operationId: 'createLink', summary: 'Add a link', description: needs('team.links.manage'), tag: 'links', access: 'teamApiKey',
      body: createLinkSchema.meta({ id: 'LinkCreateRequest' }), bodyRequired: true,
      responses: { 201: { description: 'Created.', schema: linkSchema } },
      errors: { ...JSON_BODY_ERRORS, 402: 'The team has maxLinks links (error.teamLimits.maxLinks).' },
    },
    [`GET ${base}/links/:linkId`]: {
      operationId: 'getLink', summary: 'One link', description: needs(null), tag: 'links', access: 'teamApiKey',
      responses: { 200: { description: 'The link.', schema: linkSchema } },
      errors: { 404: 'No such link.' },
    },
    [`PATCH ${base}/links/:linkId`]: {
      operationId: 'updateLink', summary: 'Change a link', description: needs('team.links.manage', 'A link turned into a FRAME has its destination checked as a frame\'s.'),
      tag: 'links', access: 'teamApiKey',
      body: updateLinkSchema.meta({ id: 'LinkUpdateRequest' }), bodyRequired: true,
      responses: { 200: { description: 'The link as it is now.', schema: linkSchema } },
      errors: { ...JSON_BODY_ERRORS, 404: 'No such link.' },
    },
    [`DELETE ${base}/links/:linkId`]: {
      operationId: 'deleteLink', summary: 'Delete a link', description: needs('team.links.manage'), tag: 'links', access: 'teamApiKey',
      responses: { 204: { description: 'Deleted.' } },
      errors: { 404: 'No such link.' },
    },
    [`GET ${base}/portal`]: {
      operationId: 'getPortal', summary: 'The team\'s portal environment', description: needs(null), tag: 'portal', access: 'teamApiKey',
      responses: { 200: { description: 'The portal.', schema: portalEnvironmentSchema } },
      errors: { 404: 'The team has no portal yet.' },
    },
    [`POST ${base}/portal`]: {
      operationId: 'createPortal', summary: 'Set up the team\'s portal', description: needs('team.portal.manage', 'One per team.'), tag: 'portal', access: 'teamApiKey',
      body: createPortalSchema.meta({ id: 'PortalCreateRequest' }), bodyRequired: true,
      responses: { 201: { description: 'Created.', schema: portalEnvironmentSchema } },
      errors: { ...JSON_BODY_ERRORS, 409: 'The team has a portal already (error.portal.exists), or another team has the subdomain (error.portal.subdomainTaken).' },
    },
    [`PATCH ${base}/portal`]: {
      operationId: 'updatePortal', summary: 'Change the team\'s portal',
      description: needs('team.portal.manage', `A subdomain change counts in domainChangeCount; the next one is allowed ${SUBDOMAIN_CHANGE_COOLDOWN_DAYS} days later (429 before).`),
      tag: 'portal', access: 'teamApiKey',
      body: updatePortalSchema.meta({ id: 'PortalUpdateRequest' }), bodyRequired: true,
      responses: { 200: { description: 'The portal as it is now.', schema: portalEnvironmentSchema } },
      errors: {
        ...JSON_BODY_ERRORS, 404: 'The team has no portal yet.', 409: 'Another team has the subdomain (error.portal.subdomainTaken).',
        429: 'The subdomain changed less than the cool-down ago (error.portal.subdomainChangeCooldown; value: when it may change), or the key\'s rate limit.',
      },
    },
    [`GET ${base}/portal/domain`]: {
      operationId: 'getPortalDomain', summary: 'The custom domain\'s status', description: needs('team.portal.manage'), tag: 'portal', access: 'teamApiKey',
      responses: { 200: { description: 'Its status.', schema: customDomainStatusSchema } },
      errors: { 404: 'No portal, or no custom domain was ever set.' },
    },
    [`PUT ${base}/portal/domain`]: {
      operationId: 'setPortalDomain', summary: 'Set a custom domain (pending until its TXT record is verified)',
      description: needs('team.portal.manage', 'The same domain again changes nothing; another one starts over with a new TXT value.'),
      tag: 'portal', access: 'teamApiKey',
      body: setDomainSchema.meta({ id: 'PortalDomainRequest' }), bodyRequired: true,
      responses: { 200: { description: 'The portal and the TXT record to publish.', schema: domainUpdateSchema } },
      errors: {
        ...JSON_BODY_ERRORS, 402: 'The plan does not include customPortalDomain (error.teamLimits.customPortalDomain).', 404: 'The team has no portal yet.',
        409: 'The domain is active for another team\'s portal (error.portal.domainTaken).',
      },
    },
    [`POST ${base}/portal/domain/verify`]: {
      operationId: 'verifyPortalDomain', summary: 'Look up the TXT record and activate the domain',
      description: needs('team.portal.manage', 'Pending: active when a TXT record at txt_name holds txt_value, else still pending with verification_errors. Active: answered as is.'),
      tag: 'portal', access: 'teamApiKey',
      responses: { 200: { description: 'The status after the lookup.', schema: customDomainStatusSchema } },
      errors: { 402: 'The plan does not include customPortalDomain.', 404: 'No portal, or no custom domain was ever set.' },
    },
    [`DELETE ${base}/portal/domain`]: {
      operationId: 'removePortalDomain', summary: 'Remove the custom domain', description: needs('team.portal.manage'), tag: 'portal', access: 'teamApiKey',
      responses: { 200: { description: 'Its status: deleted.', schema: customDomainStatusSchema } },
      errors: { 404: 'No portal, no custom domain, or it is deleted already.' },
    },
    'GET /v1/portals/:portal': {
      operationId: 'getPublicPortal', summary: 'A portal\'s public settings', description: 'No key. Limited per client address by the API\'s rate limit.',
      tag: 'portal', access: 'public',
      responses: { 200: { description: 'The portal.', schema: publicPortalSchema, headers: rateLimitHeaders } },
      errors: { 404: 'No such portal.', 429: 'Too many requests from this address.' },
    },
    'GET /v1/portals/:portal/team': {
      operationId: 'getPortalTeamOverview', summary: 'The portal team overview (spec 2.20)',
      description: 'No key. Current members by sort, then name. Limited per client address by the API\'s rate limit.',
      tag: 'portal', access: 'public',
      responses: { 200: { description: 'The members.', schema: portalTeamOverviewSchema, headers: rateLimitHeaders } },
      errors: { 404: 'No such portal, or its team overview is turned off (showTeamOverview false).', 429: 'Too many requests from this address.' },
    },
  };
}
