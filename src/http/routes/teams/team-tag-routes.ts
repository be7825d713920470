import { Permission } from '../../../auth/permissions.ts';
import { parseTagFilters, type TeamTagService } from '../../../domain/team-tags/team-tag.service.ts';
import { readPaging } from '../../paging.ts';
import { json, noContent, type Route } from '../../types.ts';
import { callerOf, type TeamRoute } from '../route-builder.ts';

/** Team tags (spec 2.16): any full key reads them, team.tags.manage changes them, team.todos.manage puts them on to-dos. */
export function teamTagRoutes(route: TeamRoute, tags: TeamTagService): Route[] {
  return [
    route('GET', '/team-tags', null, async (call) => json(200, await tags.list(call.teamId, parseTagFilters(call.request.query), readPaging(call.request)))),
    route('POST', '/team-tags', Permission.tagsManage, async (call) => json(201, await tags.create(call.teamId, await call.body(), callerOf(call)))),
    route('GET', '/team-tags/:tagId', null, async (call) => json(200, await tags.get(call.teamId, call.param('tagId')))),
    route('PATCH', '/team-tags/:tagId', Permission.tagsManage, async (call) => json(200, await tags.update(call.teamId, call.param('tagId'), await call.body()))),
    route('DELETE', '/team-tags/:tagId', Permission.tagsManage, async (call) => {
      await tags.delete(call.teamId, call.param('tagId'));
      return noContent();
    }),
    route('PUT', '/todos/:todoId/team-tags/:tagId', Permission.todosManage, async (call) => {
      await tags.attach(call.teamId, call.param('todoId'), call.param('tagId'));
      return noContent();
    }),
    route('DELETE', '/todos/:todoId/team-tags/:tagId', Permission.todosManage, async (call) => {
      await tags.detach(call.teamId, call.param('todoId'), call.param('tagId'));
      return noContent();
    }),
  ];
}
