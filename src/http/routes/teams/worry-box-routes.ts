import { Permission } from '../../../auth/permissions.ts';
import { parseWorryFilters, type WorryBoxService, type WorryCaller } from '../../../domain/worry-box/worry-box.service.ts';
import { readPaging } from '../../paging.ts';
import { json, noContent, type Route } from '../../types.ts';
import { callerOf, type TeamCall, type TeamRoute } from '../route-builder.ts';

/** The person behind the call: the key's linked member or the session's member, never the owner a key linked to no member acts as. */
const worryCaller = (call: TeamCall): WorryCaller => ({ ...callerOf(call), personMemberId: call.principal.memberId });

/** The worry box (spec 2.15): any member writes; the target group's members (or team.worryBox.manage) read and answer. */
export function worryBoxRoutes(route: TeamRoute, worries: WorryBoxService): Route[] {
  return [
    route('POST', '/worry-box', null, async (call) => json(201, await worries.create(call.teamId, await call.body(), worryCaller(call)))),
    route('GET', '/worry-box', null, async (call) =>
      json(200, await worries.list(call.teamId, parseWorryFilters(call.request.query), readPaging(call.request), worryCaller(call)))),
    route('GET', '/worry-box/mine', null, async (call) => json(200, await worries.mine(call.teamId, readPaging(call.request), worryCaller(call)))),
    route('GET', '/worry-box/:entryId', null, async (call) => json(200, await worries.get(call.teamId, call.param('entryId'), worryCaller(call)))),
    route('POST', '/worry-box/:entryId/answer', null, async (call) =>
      json(200, await worries.answer(call.teamId, call.param('entryId'), await call.body(), worryCaller(call)))),
    route('DELETE', '/worry-box/:entryId', Permission.worryBoxManage, async (call) => {
      await worries.delete(call.teamId, call.param('entryId'));
      return noContent();
    }),
  ];
}
