import { defineEntity, p } from '@mikro-orm/core';
import { BaseSchema } from '../base.entity.ts';
import { Team } from '../teams/team.entity.ts';

/** The custom domain states of spec 3.2 this service uses (docs/workspace.md). */
export const CUSTOM_DOMAIN_STATES = ['pending', 'active', 'deleted'] as const;
export type CustomDomainState = (typeof CUSTOM_DOMAIN_STATES)[number];

/**
 * PortalEnvironment of spec 2.20 (Migration20261130030000NewsLinksPortal): one per team. The
 * subdomain is unique across teams; a custom domain is unique among active ones (two teams may
 * both wait for the same domain: the TXT record decides).
 */
export const PortalEnvironmentSchema = defineEntity({
  name: 'PortalEnvironment',
  tableName: 'portal_environment',
  extends: BaseSchema,
  properties: {
    team: () => p.manyToOne(Team).unique().deleteRule('cascade'),
    subdomain: p.string().length(32).unique(),
    name: p.string().length(32),
    domainChangeCount: p.integer().default(0),
    lastDomainChange: p.datetime().nullable(),
    logoUrl: p.text().nullable(),
    faviconUrl: p.text().nullable(),
    language: p.string().length(16).default('en'),
    showApplyPanel: p.boolean().default(true),
    showTeamOverview: p.boolean().default(true),
    skipPortalPage: p.boolean().default(true),
    /** Lower case; kept (with state 'deleted') after it is removed, so its status stays readable. */
    customDomain: p.string().length(64).nullable(),
    customDomainState: p.string().length(16).nullable(),
    customDomainToken: p.string().length(80).nullable(),
    customDomainErrors: p.json<string[]>().nullable(),
  },
});

export class PortalEnvironment extends PortalEnvironmentSchema.class {}
PortalEnvironmentSchema.setClass(PortalEnvironment);
