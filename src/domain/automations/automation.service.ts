import { randomUUID } from 'node:crypto';
import { LockMode } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { conflict, notFound, teamLimit } from '../../errors/errors.ts';
import { parseTags } from '../tags.ts';
import type { Paging } from '../paging.ts';
import type { Actor } from '../actor.ts';
import { LogAction, recordTeamLog } from '../team-logs/team-log.service.ts';
import { effectiveLimits } from '../teams/team-limits.ts';
import { Team } from '../teams/team.entity.ts';
import { isUuid, parseInput, uuid } from '../validation.ts';
import { announceAutomationWork } from './automation-channel.ts';
import { AUTOMATION_KINDS, Automation, DELIVERY_STATUSES, type DeliveryStatus } from './automation.entity.ts';
import { EventKind, eventKinds, TEST_EVENT_KIND } from './event-kinds.ts';
import { generateSecret } from './signature.ts';
import { MAX_URL_LENGTH, parseTargetUrl } from './target-url.ts';
import { timestampIso } from '../views.ts';

/** Re-exported for the automation routes, which still import it from here. */
export type { Actor };

/**
 * A team's automations (webhook targets) and their deliveries, for the team
 * routes (`team.automations.manage`) and the operator routes alike.
 *
 * - At most `maxAutomations` per team (plan limit, null: unlimited), checked
 *   under a lock on the team row, so concurrent creations cannot pass it.
 * - The secret is generated here, answered by create and rotate-secret only.
 * - Another team's automation is indistinguishable from a missing one (404).
 * - Every change is logged (AUTOMATION_CREATED / _UPDATED / _DELETED) in the
 *   transaction that makes it; the URL is never logged (a Discord webhook URL
 *   is itself a credential).
 */

// C0/C1 controls and the bidirectional overrides that can disguise a name.
const UNSAFE_NAME_CHARACTERS = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

const name = z
  .string()
  .trim()
  .min(1, 'must be 1-100 characters')
  .max(100, 'must be 1-100 characters')
  .refine((value) => !UNSAFE_NAME_CHARACTERS.test(value), 'must not contain control characters');

const fields = {
  name,
  kind: z.enum(AUTOMATION_KINDS, { message: `must be one of ${AUTOMATION_KINDS.join(', ')}` }),
  url: z.string().min(1, 'must not be empty').max(MAX_URL_LENGTH, `must be at most ${MAX_URL_LENGTH} characters`),
  eventKinds: z
    .array(z.enum(eventKinds as [string, ...string[]], { message: `must be event kinds: ${eventKinds.join(', ')}` }))
    .min(1, 'must name at least one event kind')
    .max(100)
    .transform((kinds) => [...new Set(kinds)]),
  folderId: uuid.nullable(),
  includeSubfolders: z.boolean(),
  // Normalised like upload tags (lower case, 1-64 of a-z 0-9 _ . : @ -, at most 20).
  tags: z.array(z.string()).max(100),
  enabled: z.boolean(),
};

export const createSchema = z.strictObject({
  name: fields.name,
  kind: fields.kind.default('webhook'),
  url: fields.url,
  eventKinds: fields.eventKinds.default([EventKind.mediaUploaded]),
  folderId: fields.folderId.optional(),
  includeSubfolders: fields.includeSubfolders.optional(),
  tags: fields.tags.optional(),
  enabled: fields.enabled.optional(),
});

export const updateSchema = z
  .strictObject({
    name: fields.name.optional(),
    kind: fields.kind.optional(),
    url: fields.url.optional(),
    eventKinds: fields.eventKinds.optional(),
    folderId: fields.folderId.optional(),
    includeSubfolders: fields.includeSubfolders.optional(),
    tags: fields.tags.optional(),
    enabled: fields.enabled.optional(),
  })
  .refine((value) => Object.keys(value).length > 0, 'The body must change at least one field.');

export interface AutomationView {
  id: string;
  teamId: string;
  name: string;
  kind: string;
  url: string;
  eventKinds: string[];
  folderId: string | null;
  includeSubfolders: boolean;
  tags: string[];
  enabled: boolean;
  createdAt: string;
  updatedAt: string;
}

/** Only create and rotate-secret answer this. */
export type AutomationWithSecret = AutomationView & { secret: string };

export interface DeliveryView {
  id: string;
  automationId: string;
  eventId: string;
  eventKind: string;
  /** The media file of a media event, else null. */
  mediaId: string | null;
  occurredAt: string;
  status: DeliveryStatus;
  attempts: number;
  /** When the next attempt is due (pending only). */
  nextAttemptAt: string | null;
  /** HTTP status of the last answer, null when there was none (connection refused, timeout). */
  lastStatus: number | null;
  lastError: string | null;
  deliveredAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface DeliveryListFilters {
  status?: DeliveryStatus;
}

interface DeliveryRow {
  id: string;
  automation_id: string;
  event_id: string;
  event_kind: string;
  media_id: string | null;
  occurred_at: Date | string;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: Date | string;
  last_status: number | null;
  last_error: string | null;
  delivered_at: Date | string | null;
  created_at: Date | string;
  updated_at: Date | string;
}

const SELECT_DELIVERIES = `
select d.id, d.automation_id, d.event_id, e.kind as event_kind, e.payload -> 'media' ->> 'id' as media_id, e.occurred_at,
       d.status, d.attempts, d.next_attempt_at, d.last_status, d.last_error, d.delivered_at, d.created_at, d.updated_at
  from automation_delivery d join media_event e on e.id = d.event_id`;

function deliveryView(row: DeliveryRow): DeliveryView {
  return {
    id: row.id,
    automationId: row.automation_id,
    eventId: row.event_id,
    eventKind: row.event_kind,
    mediaId: row.media_id,
    occurredAt: timestampIso(row.occurred_at),
    status: row.status,
    attempts: Number(row.attempts),
    nextAttemptAt: row.status === 'pending' ? timestampIso(row.next_attempt_at) : null,
    lastStatus: row.last_status === null ? null : Number(row.last_status),
    lastError: row.last_error,
    deliveredAt: row.delivered_at === null ? null : timestampIso(row.delivered_at),
    createdAt: timestampIso(row.created_at),
    updatedAt: timestampIso(row.updated_at),
  };
}

export function automationView(automation: Automation): AutomationView {
  return {
    id: automation.id,
    teamId: automation.team.id,
    name: automation.name,
    kind: automation.kind,
    url: automation.url,
    eventKinds: automation.eventKinds,
    folderId: automation.folderId ?? null,
    includeSubfolders: automation.includeSubfolders,
    tags: automation.tags,
    enabled: automation.enabled,
    createdAt: automation.createdAt.toISOString(),
    updatedAt: automation.updatedAt.toISOString(),
  };
}

/** The status filter of the delivery list; 400 for anything else. */
export function parseDeliveryFilters(query: URLSearchParams): DeliveryListFilters {
  const status = query.get('status');
  if (status === null || status === '') return {};
  return { status: parseInput(z.object({ status: z.enum(DELIVERY_STATUSES, { message: `must be one of ${DELIVERY_STATUSES.join(', ')}` }) }), { status }).status };
}

export interface AutomationServiceOptions {
  orm: MikroORM;
  /** AUTOMATION_ALLOW_PRIVATE_TARGETS. */
  allowPrivateTargets: boolean;
  /** Wakes this instance's dispatcher after a change that makes deliveries due (others hear the NOTIFY). */
  wake?: () => void;
}

export class AutomationService {
  private readonly orm: MikroORM;
  private readonly allowPrivateTargets: boolean;
  private readonly wake: () => void;

  constructor(options: AutomationServiceOptions) {
    this.orm = options.orm;
    this.allowPrivateTargets = options.allowPrivateTargets;
    this.wake = options.wake ?? (() => undefined);
  }

  async list(teamId: string): Promise<{ data: AutomationView[]; count: number }> {
    const em = this.orm.em.fork();
    await this.requireTeam(em, teamId);
    const automations = await em.find(Automation, { team: teamId }, { orderBy: { createdAt: 'asc', id: 'asc' } });
    return { data: automations.map(automationView), count: automations.length };
  }

  async get(teamId: string, automationId: string): Promise<AutomationView> {
    return automationView(await this.find(this.orm.em.fork(), teamId, automationId));
  }

  async create(teamId: string, input: unknown, actor: Actor): Promise<AutomationWithSecret> {
    const data = parseInput(createSchema, input);
    const url = parseTargetUrl(data.url, { allowPrivateTargets: this.allowPrivateTargets });
    const tags = parseTags(data.tags ?? []);
    return this.orm.em.fork().transactional(async (em) => {
      // Locking the team row serialises the limit check of concurrent creations, and orders the
      // creation against the batch commits of uploads, which write outbox rows only once it exists.
      const team = isUuid(teamId) ? await em.findOne(Team, { id: teamId }, { populate: ['plan'], lockMode: LockMode.PESSIMISTIC_WRITE }) : null;
      if (!team) throw notFound('team', teamId);
      const limit = effectiveLimits(team.plan?.limits, team.limitOverrides).maxAutomations;
      if (limit !== null && (await em.count(Automation, { team })) >= limit) {
        throw teamLimit('maxAutomations', `The team has reached its limit of ${limit} automations`, limit);
      }
      if (data.folderId) await this.requireFolder(em, teamId, data.folderId);
      const automation = em.create(Automation, {
        team,
        name: data.name,
        kind: data.kind,
        url,
        secret: generateSecret(),
        eventKinds: data.eventKinds,
        folderId: data.folderId ?? null,
        includeSubfolders: data.includeSubfolders ?? false,
        tags,
        enabled: data.enabled ?? true,
      });
      recordTeamLog(em, {
        teamId,
        action: LogAction.automationCreated,
        teamMemberId: actor.teamMemberId,
        targetIdentifier: automation.id,
        data: { name: automation.name, kind: automation.kind, eventKinds: automation.eventKinds },
      });
      await em.flush();
      return { ...automationView(automation), secret: automation.secret };
    });
  }

  async update(teamId: string, automationId: string, input: unknown, actor: Actor): Promise<AutomationView> {
    const data = parseInput(updateSchema, input);
    const url = data.url === undefined ? undefined : parseTargetUrl(data.url, { allowPrivateTargets: this.allowPrivateTargets });
    const tags = data.tags === undefined ? undefined : parseTags(data.tags);
    const { view, resumed } = await this.orm.em.fork().transactional(async (em) => {
      // Under the team row's lock: a batch of uploads commits before the change or sees it, since it
      // writes outbox rows only for a team with an enabled automation (media_commit_uploads).
      if (isUuid(teamId)) await em.execute('select 1 from team where id = ? for share', [teamId]);
      const automation = await this.find(em, teamId, automationId, true);
      if (data.folderId) await this.requireFolder(em, teamId, data.folderId);
      const wasEnabled = automation.enabled;
      const changed: string[] = [];
      const set = <K extends 'name' | 'kind' | 'url' | 'eventKinds' | 'folderId' | 'includeSubfolders' | 'tags' | 'enabled'>(key: K, value: Automation[K] | undefined) => {
        if (value === undefined) return;
        if (JSON.stringify(automation[key]) !== JSON.stringify(value)) changed.push(key);
        automation[key] = value;
      };
      set('name', data.name);
      set('kind', data.kind);
      set('url', url);
      set('eventKinds', data.eventKinds);
      set('folderId', data.folderId);
      set('includeSubfolders', data.includeSubfolders);
      set('tags', tags);
      set('enabled', data.enabled);
      if (changed.length > 0) {
        automation.updatedAt = new Date();
        recordTeamLog(em, {
          teamId,
          action: LogAction.automationUpdated,
          teamMemberId: actor.teamMemberId,
          targetIdentifier: automation.id,
          data: { name: automation.name, changed },
        });
      }
      const resumed = !wasEnabled && automation.enabled;
      await em.flush();
      if (resumed) await announceAutomationWork(em);
      return { view: automationView(automation), resumed };
    });
    if (resumed) this.wake();
    return view;
  }

  /** Deletes the automation and its deliveries (pending ones are never sent). */
  async delete(teamId: string, automationId: string, actor: Actor): Promise<void> {
    await this.orm.em.fork().transactional(async (em) => {
      const automation = await this.find(em, teamId, automationId, true);
      recordTeamLog(em, {
        teamId,
        action: LogAction.automationDeleted,
        teamMemberId: actor.teamMemberId,
        targetIdentifier: automation.id,
        data: { name: automation.name, kind: automation.kind },
      });
      em.remove(automation);
      await em.flush();
    });
  }

  /** A new secret, effective for every attempt from now on (also retries of older events); the old one stops at once. */
  async rotateSecret(teamId: string, automationId: string, actor: Actor): Promise<AutomationWithSecret> {
    return this.orm.em.fork().transactional(async (em) => {
      const automation = await this.find(em, teamId, automationId, true);
      automation.secret = generateSecret();
      automation.updatedAt = new Date();
      recordTeamLog(em, {
        teamId,
        action: LogAction.automationUpdated,
        teamMemberId: actor.teamMemberId,
        targetIdentifier: automation.id,
        data: { name: automation.name, changed: ['secret'] },
      });
      await em.flush();
      return { ...automationView(automation), secret: automation.secret };
    });
  }

  /**
   * Queues a test message (`automation.test`, data `{automation: {id, name}}`) for this target
   * only: an outbox event marked as fanned out, so no other target gets it, and its delivery, sent
   * and retried like any other, after the target's open deliveries. 409 for a disabled target,
   * which sends nothing while disabled.
   */
  async sendTest(teamId: string, automationId: string): Promise<DeliveryView> {
    const view = await this.orm.em.fork().transactional(async (em) => {
      const automation = await this.find(em, teamId, automationId, true);
      if (!automation.enabled) throw conflict('The automation is disabled; enable it to send a test', 'disabled');
      const eventId = randomUUID();
      const deliveryId = randomUUID();
      await em.execute(
        `insert into media_event (id, team_id, kind, payload, occurred_at, fanned_out) values (?, ?, ?, ?::jsonb, now(), true)`,
        [eventId, teamId, TEST_EVENT_KIND, JSON.stringify({ automation: { id: automation.id, name: automation.name } })],
      );
      await em.execute(
        `insert into automation_delivery (id, automation_id, event_id, status, attempts, next_attempt_at, created_at, updated_at)
         values (?, ?, ?, 'pending', 0, now(), now(), now())`,
        [deliveryId, automation.id, eventId],
      );
      await announceAutomationWork(em);
      const rows = await em.execute<DeliveryRow[]>(`${SELECT_DELIVERIES} where d.id = ?`, [deliveryId]);
      return deliveryView(rows[0]!);
    });
    this.wake();
    return view;
  }

  /** Newest first (the reverse of the delivery order). */
  async listDeliveries(teamId: string, automationId: string, paging: Paging, filters: DeliveryListFilters = {}) {
    const em = this.orm.em.fork();
    const automation = await this.find(em, teamId, automationId);
    const conditions = ['d.automation_id = ?'];
    const params: unknown[] = [automation.id];
    if (filters.status) {
      conditions.push('d.status = ?');
      params.push(filters.status);
    }
    const where = conditions.join(' and ');
    const offset = (paging.pageNumber - 1) * paging.pageSize;
    const [rows, counted] = await Promise.all([
      em.execute<DeliveryRow[]>(`${SELECT_DELIVERIES} where ${where} order by d.seq desc limit ${paging.pageSize} offset ${offset}`, params),
      em.execute<{ count: string }[]>(`select count(*) as count from automation_delivery d where ${where}`, params),
    ]);
    return { data: rows.map(deliveryView), count: Number(counted[0]?.count ?? 0) };
  }

  /**
   * Puts a failed delivery back in the queue with a fresh set of attempts. It
   * keeps its place in the order, so it goes out before the target's later
   * open deliveries. Only failed deliveries: 409 for the others.
   */
  async retryDelivery(teamId: string, automationId: string, deliveryId: string): Promise<DeliveryView> {
    const view = await this.orm.em.fork().transactional(async (em) => {
      const automation = await this.find(em, teamId, automationId);
      if (!isUuid(deliveryId)) throw notFound('delivery', deliveryId);
      const updated = await em.execute<{ id: string }[]>(
        `update automation_delivery set status = 'pending', attempts = 0, next_attempt_at = now(), locked_until = null, updated_at = now()
          where id = ? and automation_id = ? and status = 'failed' returning id`,
        [deliveryId, automation.id],
      );
      const rows = await em.execute<DeliveryRow[]>(`${SELECT_DELIVERIES} where d.id = ? and d.automation_id = ?`, [deliveryId, automation.id]);
      if (!rows[0]) throw notFound('delivery', deliveryId);
      if (updated.length === 0) throw conflict(`Only failed deliveries can be retried; this one is ${rows[0].status}`, rows[0].status);
      await announceAutomationWork(em);
      return deliveryView(rows[0]);
    });
    this.wake();
    return view;
  }

  /** Every failed delivery of the automation back in the queue (after an outage of the receiver). */
  async retryFailed(teamId: string, automationId: string): Promise<{ retried: number }> {
    const retried = await this.orm.em.fork().transactional(async (em) => {
      const automation = await this.find(em, teamId, automationId);
      const updated = await em.execute<{ id: string }[]>(
        `update automation_delivery set status = 'pending', attempts = 0, next_attempt_at = now(), locked_until = null, updated_at = now()
          where automation_id = ? and status = 'failed' returning id`,
        [automation.id],
      );
      if (updated.length > 0) await announceAutomationWork(em);
      return updated.length;
    });
    if (retried > 0) this.wake();
    return { retried };
  }

  private async find(em: EntityManager, teamId: string, automationId: string, lock = false): Promise<Automation> {
    await this.requireTeam(em, teamId);
    const automation = isUuid(automationId)
      ? await em.findOne(Automation, { id: automationId, team: teamId }, lock ? { lockMode: LockMode.PESSIMISTIC_WRITE } : {})
      : null;
    if (!automation) throw notFound('automation', automationId);
    return automation;
  }

  /** The operator routes name any team id; the team routes' key has already proved it. */
  private async requireTeam(em: EntityManager, teamId: string): Promise<void> {
    if (!isUuid(teamId) || (await em.count(Team, { id: teamId })) === 0) throw notFound('team', teamId);
  }

  private async requireFolder(em: EntityManager, teamId: string, folderId: string): Promise<void> {
    const rows = await em.execute<{ id: string }[]>('select id from media_folder where id = ? and team_id = ?', [folderId, teamId]);
    if (rows.length === 0) throw notFound('folder', folderId);
  }
}
