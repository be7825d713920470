import type { MikroORM } from '@mikro-orm/postgresql';
import { Permission } from '../../../auth/permissions.ts';
import { DEFAULT_TAG_LIMIT, DEFAULT_USAGE_DAYS, MAX_TAG_LIMIT, MAX_TAG_SEARCH_LENGTH, MAX_USAGE_DAYS } from '../../../domain/media/library-limits.ts';
import { escapeLike } from '../../../domain/media/media.service.ts';
import { Team } from '../../../domain/teams/team.entity.ts';
import type { TeamService } from '../../../domain/teams/team.service.ts';
import { badRequest, notFound } from '../../../errors/errors.ts';
import { json, type Route } from '../../types.ts';
import { MEDIA_BASE, teamRouteBuilder, type TeamRouteDeps } from '../route-builder.ts';

export interface LibraryRouteDeps extends TeamRouteDeps {
  orm: MikroORM;
  teams: Pick<TeamService, 'getLimits'>;
}

/** A whole number from `min` to `max` from a query parameter; `fallback` when absent or empty. */
function integerParam(query: URLSearchParams, name: string, min: number, max: number, fallback: number): number {
  const raw = query.get(name);
  if (raw === null || raw === '') return fallback;
  const value = /^\d{1,9}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isInteger(value) || value < min || value > max) throw badRequest(`${name} must be a whole number from ${min} to ${max}.`, name);
  return value;
}

/** Spec 4.10: tags in use and usage. */
export function libraryRoutes(services: LibraryRouteDeps, config: { maxJsonBodyBytes: number }): Route[] {
  const route = teamRouteBuilder(services, config.maxJsonBodyBytes, MEDIA_BASE);
  return [
    route('GET', '/tags', Permission.mediaView, async ({ request, teamId }) => {
      const limit = integerParam(request.query, 'limit', 1, MAX_TAG_LIMIT, DEFAULT_TAG_LIMIT);
      const search = (request.query.get('search') ?? '').trim().toLowerCase();
      if (search.length > MAX_TAG_SEARCH_LENGTH) throw badRequest(`search is at most ${MAX_TAG_SEARCH_LENGTH} characters.`, 'search');
      const params: unknown[] = [teamId];
      let filter = '';
      if (search !== '') {
        filter = `and c.tag like ? escape '!'`;
        params.push(`%${escapeLike(search)}%`);
      }
      // Substring match; tags starting with the text come first, then by use. media_tag_count is kept
      // exact by triggers on media_file (Migration20261121050000TagCounts), so this reads the team's
      // count rows (in order from (team_id, count desc, tag) without a search) instead of every file.
      const prefixRank = search === '' ? '' : `(c.tag like ? escape '!') desc, `;
      const rankParams = search === '' ? [] : [`${escapeLike(search)}%`];
      const rows = await services.orm.em.fork().execute<{ tag: string; count: number }[]>(
        `select c.tag, c.count
           from media_tag_count c
          where c.team_id = ? ${filter}
          order by ${prefixRank}c.count desc, c.tag asc
          limit ${limit}`,
        [...params, ...rankParams],
      );
      return json(200, { tags: rows.map((row) => ({ tag: row.tag, count: Number(row.count) })) });
    }),
    route('GET', '/usage', Permission.mediaView, async ({ request, teamId }) => {
      const days = integerParam(request.query, 'days', 1, MAX_USAGE_DAYS, DEFAULT_USAGE_DAYS);
      const limits = await services.teams.getLimits(teamId);
      const em = services.orm.em.fork();
      const team = await em.findOne(Team, { id: teamId }, { fields: ['usedStorage'] });
      if (!team) throw notFound('team', teamId);
      const [kinds, daily] = await Promise.all([
        // The split per kind of file; used_storage is their sum (storage reconcile repairs any drift).
        em.execute<{ media: string | null; team_files: string | null; todo_files: string | null }[]>(
          `select (select coalesce(sum(size), 0) from media_file where team_id = ?) as media,
                  (select coalesce(sum(size), 0) from team_file where team_id = ?) as team_files,
                  (select coalesce(sum(size), 0) from todo_file where team_id = ?) as todo_files`,
          [teamId, teamId, teamId],
        ),
        em.execute<{ date: string; uploads: number; bytes: string; api_uploads: number; served_requests: string; served_bytes: string }[]>(
          `select to_char(d.day, 'YYYY-MM-DD') as date,
                  coalesce(u.uploads, 0)::int as uploads,
                  coalesce(u.upload_bytes, 0) as bytes,
                  coalesce(u.api_uploads, 0)::int as api_uploads,
                  coalesce(s.requests, 0) as served_requests,
                  coalesce(s.bytes, 0) as served_bytes
             from generate_series((now() at time zone 'utc')::date - ${days - 1}, (now() at time zone 'utc')::date, interval '1 day') as d(day)
             left join media_usage_daily u on u.team_id = ? and u.day = d.day::date
             left join media_served_daily s on s.team_id = ? and s.day = d.day::date
            order by d.day`,
          [teamId, teamId],
        ),
      ]);
      return json(200, {
        days,
        storage: {
          usedBytes: team.usedStorage,
          limitBytes: limits.maxTeamStorage === null ? null : limits.maxTeamStorage * 1024,
          mediaBytes: Number(kinds[0]?.media ?? 0),
          teamFileBytes: Number(kinds[0]?.team_files ?? 0),
          todoFileBytes: Number(kinds[0]?.todo_files ?? 0),
          maxFileSizeBytes: limits.maxMediaFileSize,
        },
        limits,
        uploads: daily.map((row) => ({ date: row.date, uploads: Number(row.uploads), bytes: Number(row.bytes), apiUploads: Number(row.api_uploads) })),
        // GET/HEAD /media/team/... answered by this service (not by a CDN in front of it); see ServedTrafficCounter.
        served: daily.map((row) => ({ date: row.date, requests: Number(row.served_requests), bytes: Number(row.served_bytes) })),
      });
    }),
  ];
}
