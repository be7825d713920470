import { z } from 'zod';
import type { Config } from '../../../config/config.ts';
import { Permission } from '../../../auth/permissions.ts';
import type { Principal } from '../../../auth/principal.ts';
import type { SignedLinks } from '../../../domain/media/signed-links.ts';
import { AttachedFileService, contentPath, type FileVisibility } from '../../../domain/team-files/attached-file.service.ts';
import { TEAM_FILES, TODO_FILES, type FileKind } from '../../../domain/team-files/file-kinds.ts';
import { parseTodoFilters, type TodoService } from '../../../domain/todos/todo.service.ts';
import { parseInput, uuid } from '../../../domain/validation.ts';
import { forbidden, notFound } from '../../../errors/errors.ts';
import { isStorageError } from '../../../storage/object-store.ts';
import { AttachedFileUploadTarget, parseAttachedFileQuery, type AttachedFileOptions } from '../../../uploads/targets/attached-file-target.ts';
import { JsonUploadParser, requireJsonContentType } from '../../../uploads/parsers/json-upload-parser.ts';
import { MultipartParser, multipartBoundary } from '../../../uploads/parsers/multipart-parser.ts';
import type { UploadRoute } from '../../../uploads/receive/upload-service.ts';
import type { UploadUseCase } from '../../../uploads/upload-use-case.ts';
import { readPaging } from '../../paging.ts';
import type { HttpRequest, HttpResult, Route } from '../../types.ts';
import { json, noContent } from '../../types.ts';
import { uploadAnswer } from '../../upload-answer.ts';
import { contentDisposition } from '../media/file-serving-routes.ts';
import { publicRouteBuilder, TEAM_BASE, teamRouteBuilder, type TeamCall, type TeamRouteDeps } from '../route-builder.ts';

export interface TeamFileRouteDeps extends TeamRouteDeps {
  uploadUseCase: UploadUseCase;
  /** Signs and checks the files' preview links. */
  fileLinks: SignedLinks;
  attachedFiles: AttachedFileService;
  todos: TodoService;
}

const listFilterSchema = z.strictObject({ uploadTeamMemberId: uuid.optional(), targetTeamMemberId: uuid.optional() });

/**
 * Team files and to-do boards, to-dos and to-do files (spec 2.4;
 * docs/team-files.md), under /v1/teams/{teamId}. Uploads run on the media
 * upload core (UploadUseCase) with their own UploadTarget, without an Idempotency-Key.
 */
export function teamFileRoutes(deps: TeamFileRouteDeps, config: Pick<Config, 'maxJsonBodyBytes'>): Route[] {
  const route = teamRouteBuilder(deps, config.maxJsonBodyBytes);
  const { fileLinks: links, attachedFiles: files, todos, uploadUseCase: uploads } = deps;

  /** Team files: `team.files.manage` sees all; anyone else the files it uploaded or that are for it. */
  const teamFileVisibility = (principal: Principal): FileVisibility => ({ all: principal.permissions.has(Permission.filesManage), memberId: principal.memberId });
  const everyFile: FileVisibility = { all: true, memberId: null };

  const upload = async (call: TeamCall, kind: FileKind, route: UploadRoute, options: AttachedFileOptions): Promise<HttpResult> => {
    const { request, principal } = call;
    if (route === 'json') requireJsonContentType(request.headers['content-type']);
    const boundary = route === 'multipart' ? multipartBoundary(request.headers['content-type'] ?? '') : '';
    const result = await uploads.receive({
      kind: route, principal, target: new AttachedFileUploadTarget(files, kind, principal, options, route === 'json'),
      body: request.body, clientGone: request.signal,
      createParser: (events) => (route === 'json' ? new JsonUploadParser(events) : new MultipartParser(boundary, events)),
    });
    return uploadAnswer(result, {});
  };

  return [
    // Team files.
    route('GET', '/files', null, async (call) => {
      const filters = parseInput(listFilterSchema, queryObject(call.request));
      return json(200, await files.list(TEAM_FILES, call.teamId, teamFileVisibility(call.principal), filters, readPaging(call.request)));
    }),
    route('POST', '/files', Permission.filesUpload, (call) => upload(call, TEAM_FILES, 'json', { fileName: null, attachId: null })),
    route('POST', '/files/multipart', Permission.filesUpload, (call) => upload(call, TEAM_FILES, 'multipart', parseAttachedFileQuery(call.request.query, TEAM_FILES))),
    route('GET', '/files/:fileId', null, async (call) => json(200, await files.get(TEAM_FILES, call.teamId, call.param('fileId'), teamFileVisibility(call.principal)))),
    route('DELETE', '/files/:fileId', null, async (call) =>
      json(200, await files.delete(TEAM_FILES, call.teamId, call.param('fileId'), teamFileVisibility(call.principal), call.actor))),

    // To-do boards and to-dos.
    route('GET', '/todo-boards', Permission.todosView, async (call) => json(200, await todos.listBoards(call.teamId))),
    route('POST', '/todo-boards', Permission.todosManage, async (call) => json(201, await todos.createBoard(call.teamId, await call.body()))),
    route('PATCH', '/todo-boards/:boardId', Permission.todosManage, async (call) => json(200, await todos.updateBoard(call.teamId, call.param('boardId'), await call.body()))),
    route('DELETE', '/todo-boards/:boardId', Permission.todosManage, async (call) => {
      await todos.deleteBoard(call.teamId, call.param('boardId'), call.actor);
      return noContent();
    }),
    route('GET', '/todo-boards/:boardId/todos', Permission.todosView, async (call) =>
      json(200, await todos.listTodos(call.teamId, call.param('boardId'), parseTodoFilters(call.request.query), readPaging(call.request)))),
    route('POST', '/todo-boards/:boardId/todos', Permission.todosManage, async (call) =>
      json(201, await todos.createTodo(call.teamId, call.param('boardId'), await call.body(), call.actor))),
    route('GET', '/todos/:todoId', Permission.todosView, async (call) => json(200, await todos.getTodo(call.teamId, call.param('todoId')))),
    route('PATCH', '/todos/:todoId', Permission.todosManage, async (call) => json(200, await todos.updateTodo(call.teamId, call.param('todoId'), await call.body()))),
    route('DELETE', '/todos/:todoId', Permission.todosManage, async (call) => {
      await todos.deleteTodo(call.teamId, call.param('todoId'), call.actor);
      return noContent();
    }),

    // To-do files.
    route('GET', '/todos/:todoId/files', Permission.todosView, async (call) => {
      const todoId = call.param('todoId');
      await todos.getTodo(call.teamId, todoId);
      return json(200, await files.list(TODO_FILES, call.teamId, everyFile, { todoId }, readPaging(call.request)));
    }),
    route('POST', '/todos/:todoId/files', Permission.todosManage, (call) => upload(call, TODO_FILES, 'json', { fileName: null, attachId: call.param('todoId') })),
    route('POST', '/todos/:todoId/files/multipart', Permission.todosManage, (call) =>
      upload(call, TODO_FILES, 'multipart', { ...parseAttachedFileQuery(call.request.query, TODO_FILES), attachId: call.param('todoId') })),
    route('GET', '/todos/:todoId/files/:fileId', Permission.todosView, async (call) =>
      json(200, await files.get(TODO_FILES, call.teamId, call.param('fileId'), everyFile, call.param('todoId')))),
    route('DELETE', '/todos/:todoId/files/:fileId', Permission.todosManage, async (call) =>
      json(200, await files.delete(TODO_FILES, call.teamId, call.param('fileId'), everyFile, call.actor, call.param('todoId')))),

    // The signed previews: no key, the signature is the access.
    contentRoute(TEAM_FILES, files, links),
    contentRoute(TODO_FILES, files, links),
  ];
}

function queryObject(request: HttpRequest): Record<string, string> {
  return Object.fromEntries([...request.query.entries()].filter(([key]) => key !== 'pageNumber' && key !== 'pageSize'));
}

/**
 * GET `/v1/teams/{teamId}/<files|todo-files>/{fileId}/content?expires=&signature=`:
 * the file's bytes, for the `previewUrl` of a file. The signature is checked
 * before the database is asked (403 when missing, wrong or expired), so a 403
 * says nothing about whether the file exists; a deleted file is 404.
 */
function contentRoute(kind: FileKind, files: AttachedFileService, links: SignedLinks): Route {
  return publicRouteBuilder()('GET', `${TEAM_BASE}/${kind.contentSegment}/:fileId/content`, async ({ request, param }) => {
    const teamId = param('teamId');
    const fileId = param('fileId');
    const check = links.verify(contentPath(kind, teamId, fileId), request.query.get('expires'), request.query.get('signature'));
    if (!check.valid) throw forbidden(check.reason === 'expired' ? 'The signed link has expired' : 'The signed link is not valid');
    const file = await files.content(kind, teamId, fileId);
    if (!file) throw notFound(kind.label, fileId);
    const headers = {
      'Content-Type': file.contentType,
      'Content-Disposition': contentDisposition(file.contentType, file.fileName),
      'X-Content-Type-Options': 'nosniff',
      ETag: `"${file.hash}"`,
      'Cache-Control': `private, max-age=${check.secondsLeft}`,
    };
    if (file.size === 0) return { status: 200, headers, stream: { body: (async function* () {})(), length: 0 } };
    try {
      return { status: 200, headers, stream: { body: await files.read(file.storageKey), length: file.size } };
    } catch (error) {
      if (isStorageError(error) && error.code === 'not-found') throw notFound(kind.label, fileId);
      throw error;
    }
  });
}
