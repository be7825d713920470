import { randomUUID } from 'node:crypto';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import type { AutomationSettings } from '../config/config.ts';
import { discordMessage } from '../domain/automations/discord-format.ts';
import { eventPayload, matchesAutomation, mediaOf, type AutomationFilter, type OutboxEvent } from '../domain/automations/payload.ts';
import { signatureHeader } from '../domain/automations/signature.ts';
import { backoffDelayMs, retryAfterMs } from './backoff.ts';
import { WebhookSender, type WebhookAnswer } from './webhook-sender.ts';

/**
 * Delivers outbox events to automations: at least once, in order per target,
 * from any number of instances, surviving restarts.
 *
 * One run ("tick"):
 * 1. Fan-out: events not yet fanned out (`media_event.fanned_out = false`) are
 *    read in commit-visible order, matched against the team's enabled
 *    automations (kinds, folder, tags, created before the event), turned into
 *    `automation_delivery` rows and marked, in one transaction. A
 *    transaction-scoped advisory lock makes instances fan out one at a time, so
 *    `seq` (the per-target order) follows the order events became visible; the
 *    unique (automation, event) makes a repeated fan-out harmless.
 * 2. Claim: the oldest open delivery of each target (no earlier delivery of the
 *    target is pending or delivering) whose attempt is due, locked with
 *    `FOR UPDATE SKIP LOCKED` and set to `delivering` with a lease
 *    (`locked_until` = now + timeout + margin) and `attempts + 1` in the same
 *    statement. Two instances never claim the same delivery, and a target never
 *    has two deliveries in flight. A lease that runs out (the instance died) is
 *    claimed again; after the last attempt it is marked failed instead.
 * 3. Send (not awaited by the tick; at most AUTOMATION_CONCURRENCY per
 *    instance): signed POST, then record the answer: 2xx → delivered; else
 *    pending again after an exponential backoff with jitter (at least what
 *    `Retry-After` asks, capped at AUTOMATION_BACKOFF_MAX_MS), or failed after
 *    AUTOMATION_MAX_ATTEMPTS. A failed delivery no longer holds its target's
 *    queue. The update only applies to our own claim (status, attempts).
 *
 * Wake-ups: NOTIFY `automation_events` (sent on commit by the outbox trigger
 * for teams with an enabled automation, and by the service after a retry or a
 * re-enable; Application listens and calls wake()), every finished delivery, the
 * due time of the earliest backoff, and at most AUTOMATION_DISPATCH_INTERVAL_MS
 * as a fallback. Runs never overlap within an instance; a wake-up during a run
 * starts another one right after it.
 */

const FANOUT_BATCH = 200;
/** pg advisory lock key of the fan-out (migrations use 727001, the folder sweep 727002). */
const FANOUT_LOCK_KEY = 727_003;
/** A claim's lease beyond the request timeout: time to record the answer. */
const LEASE_MARGIN_MS = 5_000;
/** Shortest wait between runs when something is due but not claimable here (held by another instance). */
const MIN_DELAY_MS = 20;
const PRUNE_EVERY_MS = 10 * 60_000;
const PRUNE_BATCH = 1000;
const MAX_ERROR_LENGTH = 1000;

export const USER_AGENT = 'media-upload-service-webhooks/1';

export const DeliveryHeader = {
  eventId: 'x-media-event-id',
  eventKind: 'x-media-event',
  deliveryId: 'x-media-delivery-id',
  attempt: 'x-media-delivery-attempt',
  signature: 'x-media-signature',
} as const;

export interface DispatcherOptions {
  orm: MikroORM;
  logger: Pick<Logger, 'info' | 'warn' | 'error' | 'debug'>;
  settings: AutomationSettings;
}

interface EventRow {
  id: string;
  team_id: string;
  kind: string;
  payload: Record<string, unknown>;
  occurred_at: Date | string;
}

interface AutomationRow {
  id: string;
  team_id: string;
  event_kinds: string[];
  folder_id: string | null;
  include_subfolders: boolean;
  tags: string[];
  created_at: Date | string;
}

interface ClaimRow {
  id: string;
  attempts: number;
  automation_id: string;
  automation_kind: 'webhook' | 'discord';
  url: string;
  secret: string;
  event_id: string;
  team_id: string;
  event_kind: string;
  payload: Record<string, unknown>;
  occurred_at: Date | string;
}

function toDate(value: Date | string): Date {
  return value instanceof Date ? value : new Date(value);
}

function truncate(text: string): string {
  return text.length <= MAX_ERROR_LENGTH ? text : `${text.slice(0, MAX_ERROR_LENGTH - 1)}…`;
}

/** Open deliveries that are the oldest open one of their target. */
const IS_HEAD = `not exists (select 1 from automation_delivery e
  where e.automation_id = c.automation_id and e.status in ('pending', 'delivering') and e.seq < c.seq)`;

export class AutomationDispatcher {
  private readonly orm: MikroORM;
  private readonly logger: DispatcherOptions['logger'];
  private readonly settings: AutomationSettings;
  private readonly sender: WebhookSender;
  private readonly inFlight = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private started = false;
  private stopping = false;
  private stopped: Promise<void> | null = null;
  private lastPrune = 0;

  constructor(options: DispatcherOptions) {
    this.orm = options.orm;
    this.logger = options.logger;
    this.settings = options.settings;
    this.sender = new WebhookSender({ allowPrivateTargets: options.settings.allowPrivateTargets, userAgent: USER_AGENT });
  }

  /** Starts dispatching (Application calls it once the service is ready). */
  start(): void {
    if (this.started || this.stopping) return;
    this.started = true;
    this.wake();
  }

  /** Asks for a run as soon as possible (new events, a finished delivery, a retry). */
  wake(): void {
    if (!this.started || this.stopping) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.schedule(0);
  }

  /**
   * Claims nothing more; waits for the run in progress and the deliveries in
   * flight (each bounded by AUTOMATION_DELIVERY_TIMEOUT_MS), so their answers
   * are recorded before the database closes. Idempotent.
   */
  stop(): Promise<void> {
    this.stopped ??= (async () => {
      this.stopping = true;
      if (this.timer) clearTimeout(this.timer);
      this.timer = null;
      await this.running?.catch(() => undefined);
      await Promise.allSettled([...this.inFlight.values()]);
      this.sender.close();
    })();
    return this.stopped;
  }

  /** Deliveries this instance is sending right now. */
  get deliveriesInFlight(): number {
    return this.inFlight.size;
  }

  private schedule(delayMs: number): void {
    if (this.stopping) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.run();
    }, delayMs);
    this.timer.unref();
  }

  private run(): void {
    if (this.running || this.stopping) return;
    this.again = false;
    this.running = (async () => {
      let delay = this.settings.dispatchIntervalMs;
      try {
        delay = await this.tick();
      } catch (error) {
        this.logger.error({ err: error }, 'automation dispatch failed');
      } finally {
        this.running = null;
      }
      if (this.again) this.schedule(0);
      else this.schedule(delay);
    })();
  }

  /** One run; answers how long to wait before the next one. */
  private async tick(): Promise<number> {
    await this.fanOut();
    await this.failAbandoned();
    const free = this.settings.concurrency - this.inFlight.size;
    let claimedAll = true;
    if (free > 0 && !this.stopping) {
      const claimed = await this.claim(free);
      for (const delivery of claimed) this.launch(delivery);
      claimedAll = claimed.length < free;
    }
    if (Date.now() - this.lastPrune >= PRUNE_EVERY_MS) {
      this.lastPrune = Date.now();
      await this.prune();
    }
    // At capacity: every finished delivery wakes us, the interval is only a fallback.
    if (!claimedAll || free <= 0) return this.settings.dispatchIntervalMs;
    const due = await this.nextDueInMs();
    return due === null ? this.settings.dispatchIntervalMs : Math.min(this.settings.dispatchIntervalMs, Math.max(MIN_DELAY_MS, due));
  }

  /** Turns unhandled outbox events into deliveries, batch by batch. */
  private async fanOut(): Promise<void> {
    // A cheap look first (partial index), so idle instances take no lock and open no transaction.
    const waiting = await this.orm.em.fork().execute<{ id: string }[]>('select id from media_event where not fanned_out limit 1');
    if (waiting.length === 0) return;
    for (;;) {
      const handled = await this.orm.em.fork().transactional((em) => this.fanOutBatch(em));
      if (handled < FANOUT_BATCH || this.stopping) return;
    }
  }

  private async fanOutBatch(em: EntityManager): Promise<number> {
    await em.execute(`select pg_advisory_xact_lock(${FANOUT_LOCK_KEY})`);
    const rows = await em.execute<EventRow[]>(
      `select id, team_id, kind, payload, occurred_at from media_event where not fanned_out order by occurred_at, id limit ${FANOUT_BATCH}`,
    );
    if (rows.length === 0) return 0;
    const events: OutboxEvent[] = rows.map((row) => ({ id: row.id, teamId: row.team_id, kind: row.kind, payload: row.payload, occurredAt: toDate(row.occurred_at) }));
    const teamIds = [...new Set(events.map((event) => event.teamId))];
    const automations = (
      await em.execute<AutomationRow[]>(
        `select id, team_id, event_kinds, folder_id, include_subfolders, tags, created_at from automation
          where enabled and team_id in (?) order by created_at, id`,
        [teamIds],
      )
    ).map((row) => ({
      id: row.id,
      filter: {
        teamId: row.team_id,
        eventKinds: row.event_kinds,
        folderId: row.folder_id,
        includeSubfolders: row.include_subfolders,
        tags: row.tags,
        createdAt: toDate(row.created_at),
      } satisfies AutomationFilter,
    }));
    const ancestors = await this.folderAncestors(em, events, automations.map((automation) => automation.filter));
    const values: string[] = [];
    const params: unknown[] = [];
    for (const event of events) {
      for (const automation of automations) {
        if (!matchesAutomation(automation.filter, event, (folderId) => ancestors.get(folderId) ?? new Set([folderId]))) continue;
        values.push(`(?, ?, ?, 'pending', 0, now(), now(), now())`);
        params.push(randomUUID(), automation.id, event.id);
      }
    }
    if (values.length > 0) {
      // Rows get their seq in the order of the VALUES list: event order.
      await em.execute(
        `insert into automation_delivery (id, automation_id, event_id, status, attempts, next_attempt_at, created_at, updated_at)
         values ${values.join(', ')} on conflict (automation_id, event_id) do nothing`,
        params,
      );
    }
    await em.execute(`update media_event set fanned_out = true where id in (?)`, [events.map((event) => event.id)]);
    return rows.length;
  }

  /** For each folder of an event that a subfolder filter may need: the folder and its ancestors. */
  private async folderAncestors(em: EntityManager, events: OutboxEvent[], filters: AutomationFilter[]): Promise<Map<string, Set<string>>> {
    const map = new Map<string, Set<string>>();
    const teams = new Set(filters.filter((filter) => filter.folderId !== null && filter.includeSubfolders).map((filter) => filter.teamId));
    const folderIds = [...new Set(events.filter((event) => teams.has(event.teamId)).map((event) => mediaOf(event)?.folderId).filter((id): id is string => !!id))];
    if (folderIds.length === 0) return map;
    const rows = await em.execute<{ start_id: string; id: string }[]>(
      `with recursive up (start_id, id, parent_id) as (
         select id, id, parent_id from media_folder where id in (?)
         union all
         select up.start_id, f.id, f.parent_id from media_folder f join up on f.id = up.parent_id
       ) select start_id, id from up`,
      [folderIds],
    );
    for (const row of rows) {
      let set = map.get(row.start_id);
      if (!set) map.set(row.start_id, (set = new Set()));
      set.add(row.id);
    }
    return map;
  }

  /** A lease that ran out after the last attempt: the instance died mid-attempt; no more attempts. */
  private async failAbandoned(): Promise<void> {
    await this.orm.em.fork().execute(
      `update automation_delivery set status = 'failed', locked_until = null, updated_at = now(),
              last_error = 'the last attempt was interrupted (the instance sending it stopped) and no attempts are left'
        where status = 'delivering' and locked_until < now() and attempts >= ?`,
      [this.settings.maxAttempts],
    );
  }

  private async claim(limit: number): Promise<ClaimRow[]> {
    const leaseMs = this.settings.deliveryTimeoutMs + LEASE_MARGIN_MS;
    return this.orm.em.fork().execute<ClaimRow[]>(
      `with picked as materialized (
         select c.id from automation_delivery c
           join automation a on a.id = c.automation_id and a.enabled
          where ((c.status = 'pending' and c.next_attempt_at <= now())
                 or (c.status = 'delivering' and c.locked_until < now() and c.attempts < ?))
            and ${IS_HEAD}
          order by c.seq
          limit ${Math.floor(limit)}
          for update of c skip locked
       ), claimed as (
         update automation_delivery d
            set status = 'delivering', attempts = d.attempts + 1, locked_until = now() + ? * interval '1 millisecond', updated_at = now()
           from picked where d.id = picked.id
         returning d.id, d.attempts, d.automation_id, d.event_id
       )
       select cl.id, cl.attempts, a.id as automation_id, a.kind as automation_kind, a.url, a.secret,
              e.id as event_id, e.team_id, e.kind as event_kind, e.payload, e.occurred_at
         from claimed cl
         join automation a on a.id = cl.automation_id
         join media_event e on e.id = cl.event_id`,
      [this.settings.maxAttempts, leaseMs],
    );
  }

  private launch(delivery: ClaimRow): void {
    const promise = this.deliver(delivery)
      .catch((error: unknown) => this.logger.error({ err: error, deliveryId: delivery.id }, 'automation delivery could not be recorded'))
      .finally(() => {
        this.inFlight.delete(delivery.id);
        this.wake();
      });
    this.inFlight.set(delivery.id, promise);
  }

  private async deliver(delivery: ClaimRow): Promise<void> {
    const payload = eventPayload({
      id: delivery.event_id,
      teamId: delivery.team_id,
      kind: delivery.event_kind,
      payload: delivery.payload,
      occurredAt: toDate(delivery.occurred_at),
    });
    const body = Buffer.from(JSON.stringify(delivery.automation_kind === 'discord' ? discordMessage(payload) : payload));
    const timestamp = Math.floor(Date.now() / 1000);
    const attempt = Number(delivery.attempts);
    let answer: WebhookAnswer | null = null;
    let failure: string | null = null;
    try {
      answer = await this.sender.send({
        url: delivery.url,
        body,
        timeoutMs: this.settings.deliveryTimeoutMs,
        headers: {
          [DeliveryHeader.eventId]: delivery.event_id,
          [DeliveryHeader.eventKind]: delivery.event_kind,
          [DeliveryHeader.deliveryId]: delivery.id,
          [DeliveryHeader.attempt]: String(attempt),
          [DeliveryHeader.signature]: signatureHeader(delivery.secret, timestamp, body),
        },
      });
      if (answer.status < 200 || answer.status > 299) failure = `HTTP ${answer.status}${answer.body ? `: ${answer.body.trim()}` : ''}`;
    } catch (error) {
      failure = (error as Error).message;
    }
    const em = this.orm.em.fork();
    if (failure === null) {
      await em.execute(
        `update automation_delivery set status = 'delivered', delivered_at = now(), locked_until = null, last_status = ?, last_error = null, updated_at = now()
          where id = ? and status = 'delivering' and attempts = ?`,
        [answer!.status, delivery.id, attempt],
      );
      this.logger.debug({ deliveryId: delivery.id, automationId: delivery.automation_id, attempt }, 'automation delivery delivered');
      return;
    }
    const backoff = backoffDelayMs(attempt, this.settings.backoffBaseMs, this.settings.backoffMaxMs);
    const delay = Math.min(this.settings.backoffMaxMs, Math.max(backoff, retryAfterMs(answer?.retryAfter) ?? 0));
    const final = attempt >= this.settings.maxAttempts;
    await em.execute(
      `update automation_delivery
          set status = ?, next_attempt_at = now() + ? * interval '1 millisecond', locked_until = null,
              last_status = ?, last_error = ?, updated_at = now()
        where id = ? and status = 'delivering' and attempts = ?`,
      [final ? 'failed' : 'pending', final ? 0 : delay, answer?.status ?? null, truncate(failure), delivery.id, attempt],
    );
    const details = { deliveryId: delivery.id, automationId: delivery.automation_id, eventId: delivery.event_id, attempt, error: truncate(failure) };
    if (final) this.logger.warn(details, 'automation delivery failed after its last attempt');
    else this.logger.debug({ ...details, retryInMs: delay }, 'automation delivery attempt failed');
  }

  /** When the earliest open head delivery becomes claimable (ms from now, may be ≤ 0); null when none. */
  private async nextDueInMs(): Promise<number | null> {
    const rows = await this.orm.em.fork().execute<{ due_ms: string | number | null }[]>(
      `select extract(epoch from (min(case when c.status = 'pending' then c.next_attempt_at else c.locked_until end) - now())) * 1000 as due_ms
         from automation_delivery c join automation a on a.id = c.automation_id and a.enabled
        where c.status in ('pending', 'delivering') and ${IS_HEAD}`,
    );
    const due = rows[0]?.due_ms;
    return due === null || due === undefined ? null : Number(due);
  }

  /** Deletes delivered and failed deliveries older than the retention, a batch at a time. */
  private async prune(): Promise<void> {
    for (let round = 0; round < 10 && !this.stopping; round++) {
      const deleted = await this.orm.em.fork().execute<{ id: string }[]>(
        `delete from automation_delivery where id in (
           select id from automation_delivery
            where status in ('delivered', 'failed') and updated_at < now() - ? * interval '1 day'
            limit ${PRUNE_BATCH})
         returning id`,
        [this.settings.deliveryRetentionDays],
      );
      if (deleted.length < PRUNE_BATCH) return;
    }
  }
}
