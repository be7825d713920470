import type { ApiKeyService } from '../../../domain/api-keys/api-key.service.ts';
import { parseMemberSearch } from '../../../domain/members/member-admin.service.ts';
import type { MemberService } from '../../../domain/members/member.service.ts';
import type { TeamService } from '../../../domain/teams/team.service.ts';
import { readPaging } from '../../paging.ts';
import { json, noContent, type HttpResult, type Route } from '../../types.ts';
import { operatorRouteBuilder, type OperatorCall, type OperatorRouteDeps } from '../route-builder.ts';

export interface OperatorTeamRouteDeps extends OperatorRouteDeps {
  maxJsonBodyBytes: number;
  teams: TeamService;
  members: MemberService;
  apiKeys: ApiKeyService;
}

/**
 * These routes read the JSON body right after the secret is checked, whatever their method, as
 * they always have: a body that is not JSON is a 400 on each of them (see their OpenAPI errors).
 */
function withBody(handle: (call: OperatorCall, body: unknown) => Promise<HttpResult>): (call: OperatorCall) => Promise<HttpResult> {
  return async (call) => handle(call, await call.body());
}

/** The operator routes of the contract for teams, members, groups and keys, behind the `authSecret` header. */
export function operatorRoutes(deps: OperatorTeamRouteDeps): Route[] {
  const { teams, members, apiKeys } = deps;
  const route = operatorRouteBuilder(deps, deps.maxJsonBodyBytes);

  return [
    // The same `search` query parameter as the member list.
    route('GET', '/v1/admin/teams', withBody(async (call) => json(200, await teams.listTeams(readPaging(call.request), parseMemberSearch(call.request.query))))),
    route('GET', '/v1/admin/teams/:teamId/api-keys', withBody(async (call) => json(200, await teams.listApiKeys(call.param('teamId'))))),
    route('POST', '/v1/admin/teams', withBody(async (_call, body) => json(201, await teams.createTeam(body)))),
    route('POST', '/v1/admin/teams/:teamId/members', withBody(async (call, body) => json(201, await members.createMember(call.param('teamId'), body)))),
    route('POST', '/v1/admin/teams/:teamId/groups', withBody(async (call, body) => json(201, await members.createGroup(call.param('teamId'), body)))),
    route('POST', '/v1/admin/teams/:teamId/members/:memberId/groups', withBody(async (call, body) => {
      await members.addMemberToGroup(call.param('teamId'), call.param('memberId'), body);
      return noContent();
    })),
    route('POST', '/v1/admin/teams/:teamId/api-keys', withBody(async (call, body) => json(201, await apiKeys.create(call.param('teamId'), body)))),
    route('POST', '/v1/admin/api-keys/:keyId/reroll', withBody(async (call) => json(200, await apiKeys.reroll(call.param('keyId'))))),
    route('DELETE', '/v1/admin/api-keys/:keyId', withBody(async (call) => {
      await apiKeys.delete(call.param('keyId'));
      return noContent();
    })),
    route('PATCH', '/v1/admin/teams/:teamId/limits', withBody(async (call, body) => json(200, await teams.updateLimits(call.param('teamId'), body)))),
  ];
}
