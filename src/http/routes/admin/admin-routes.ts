import type { FailureThrottle } from '../../../auth/failure-throttle.ts';
import type { ApiKeyService } from '../../../domain/api-keys/api-key.service.ts';
import { parseMemberSearch } from '../../../domain/members/member-admin.service.ts';
import type { MemberService } from '../../../domain/members/member.service.ts';
import type { TeamService } from '../../../domain/teams/team.service.ts';
import { requireOperator } from '../../guards.ts';
import { readPaging } from '../../paging.ts';
import { json, noContent, type Handler, type HttpRequest, type Route } from '../../types.ts';

export interface AdminRouteDeps {
  authSecret: string;
  /** Wrong authSecret values count here per client address (429 past the budget). */
  authFailures: FailureThrottle;
  maxJsonBodyBytes: number;
  teams: TeamService;
  members: MemberService;
  apiKeys: ApiKeyService;
}

/** The operator routes of the contract, behind the `authSecret` header. */
export function adminRoutes(deps: AdminRouteDeps): Route[] {
  const { teams, members, apiKeys } = deps;
  const operator = (handler: (request: HttpRequest, body: unknown) => ReturnType<Handler>): Handler => async (request) => {
    await requireOperator(request, deps.authSecret, deps.authFailures);
    const body = await request.body.json(deps.maxJsonBodyBytes);
    return handler(request, body);
  };
  const param = (request: HttpRequest, name: string) => request.params[name] ?? '';

  return [
    {
      method: 'GET',
      pattern: '/v1/admin/teams',
      // The same `search` query parameter as the member list.
      handler: operator(async (request) => json(200, await teams.listTeams(readPaging(request), parseMemberSearch(request.query)))),
    },
    {
      method: 'GET',
      pattern: '/v1/admin/teams/:teamId/api-keys',
      handler: operator(async (request) => json(200, await teams.listApiKeys(param(request, 'teamId')))),
    },
    {
      method: 'POST',
      pattern: '/v1/admin/teams',
      handler: operator(async (_request, body) => json(201, await teams.createTeam(body))),
    },
    {
      method: 'POST',
      pattern: '/v1/admin/teams/:teamId/members',
      handler: operator(async (request, body) => json(201, await members.createMember(param(request, 'teamId'), body))),
    },
    {
      method: 'POST',
      pattern: '/v1/admin/teams/:teamId/groups',
      handler: operator(async (request, body) => json(201, await members.createGroup(param(request, 'teamId'), body))),
    },
    {
      method: 'POST',
      pattern: '/v1/admin/teams/:teamId/members/:memberId/groups',
      handler: operator(async (request, body) => {
        await members.addMemberToGroup(param(request, 'teamId'), param(request, 'memberId'), body);
        return noContent();
      }),
    },
    {
      method: 'POST',
      pattern: '/v1/admin/teams/:teamId/api-keys',
      handler: operator(async (request, body) => json(201, await apiKeys.create(param(request, 'teamId'), body))),
    },
    {
      method: 'POST',
      pattern: '/v1/admin/api-keys/:keyId/reroll',
      handler: operator(async (request) => json(200, await apiKeys.reroll(param(request, 'keyId')))),
    },
    {
      method: 'DELETE',
      pattern: '/v1/admin/api-keys/:keyId',
      handler: operator(async (request) => {
        await apiKeys.delete(param(request, 'keyId'));
        return noContent();
      }),
    },
    {
      method: 'PATCH',
      pattern: '/v1/admin/teams/:teamId/limits',
      handler: operator(async (request, body) => json(200, await teams.updateLimits(param(request, 'teamId'), body))),
    },
  ];
}
