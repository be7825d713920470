import { z } from 'zod';
import { TODO_STATES } from '../../domain/todos/todo.entity.ts';
import { createBoardSchema, createTodoSchema, updateBoardSchema, updateTodoSchema } from '../../domain/todos/todo.service.ts';
import { uploadOptionSchemas } from '../../uploads/options/upload-options.ts';
import type { OperationDoc } from './operation-doc.ts';
import { JSON_BODY_ERRORS } from './common-errors.ts';

/** Team files, to-do boards, to-dos and to-do files (src/http/routes/teams/team-file-routes.ts; docs/team-files.md). */

const base = '/v1/teams/:teamId';
const id = z.uuid();
const timestamp = z.iso.datetime();
const count = z.number().int().min(0);
const bytes = z.number().int().min(0);

const fileFields = {
  id,
  teamId: id,
  uploadTeamMemberId: id.nullable().meta({ description: 'Who uploaded it (the owner\'s member for a key acting as the owner); null once that member is deleted.' }),
  path: z.string().meta({ description: 'The file\'s name as uploaded (fileName, or the multipart file\'s name).' }),
  size: bytes,
  hash: z.string().regex(/^[0-9a-f]{16}$/).meta({ description: 'The content hash: xxh64 of the xxh64 hashes of the 1 MiB blocks, 16 hex digits (docs/team-files.md).' }),
  previewUrl: z.string().nullable().meta({ description: 'The file\'s bytes, by a link signed for a limited time (no key needed).' }),
  previewUrlExpiresAt: timestamp.nullable(),
  createdAt: timestamp,
  updatedAt: timestamp,
};

export const teamFileSchema = z
  .object({ ...fileFields, targetTeamMemberId: id.nullable().meta({ description: 'The member the file is for; null: nobody in particular.' }) })
  .meta({ id: 'TeamFile' });
export const todoFileSchema = z.object({ ...fileFields, todoId: id }).meta({ id: 'TodoFile' });
const fileList = (item: z.ZodType, name: string) =>
  z.object({ data: z.array(item), count, usedTeamStorage: bytes }).meta({ id: name, description: 'Newest first, one page; count is all matching files.' });
export const uploadedFileSchema = z
  .object({ id, path: z.string(), usedTeamStorage: bytes.meta({ description: 'The team\'s used storage (all kinds of files) right after this upload.' }) })
  .meta({ id: 'UploadedTeamFile' });
const fileDeletionSchema = z.object({ deleted: id, usedTeamStorage: bytes }).meta({ id: 'TeamFileDeletion' });

export const todoBoardSchema = z
  .object({ id, teamId: id, title: z.string(), description: z.string(), sort: z.number().int(), createdAt: timestamp, updatedAt: timestamp })
  .meta({ id: 'TodoBoard' });
export const todoSchema = z
  .object({
    id, teamId: id, boardId: id, title: z.string(), description: z.string(), state: z.enum(TODO_STATES),
    assigneeTeamMemberId: id.nullable(), dueDate: timestamp.nullable(), sort: z.number().int(), creatorTeamMemberId: id.nullable(),
    createdAt: timestamp, updatedAt: timestamp,
  })
  .meta({ id: 'Todo' });

const jsonUpload = (name: string, withTarget: boolean) =>
  z
    .object({
      file: z.string().meta({ description: 'The content as a data URI (data:<type>;base64,...) or plain base64; decoded as it streams.' }),
      fileName: uploadOptionSchemas.fileName,
      ...(withTarget ? { targetTeamMemberId: id.optional().meta({ description: 'A current member of the team the file is for.' }) } : {}),
    })
    .meta({ id: name, description: 'Other members are ignored.' });
const multipartUpload = z.object({
  file: z.string().meta({ format: 'binary', contentMediaType: 'application/octet-stream', description: 'The file; without a field named file, the first file of the form.' }),
});

const needs = (permission: string | null, more = '') =>
  `${permission ? `Needs \`${permission}\`.` : 'Any full key of the team.'} A key with scope media:upload gets 403.${more ? ` ${more}` : ''}`;
const UPLOAD_ERRORS = (what: string) => ({
  400: 'Invalid fileName or targetTeamMemberId, malformed body or base64, no file.',
  402: 'Plan limit: file larger than maxMediaFileSize, or the team storage (maxTeamStorage, shared by media, team files and to-do files) is full.',
  404: `${what} does not exist.`,
  408: 'The body stopped arriving for UPLOAD_IDLE_TIMEOUT_SECONDS.',
  413: 'The body is larger than the route allows (JSON 140 MB, multipart 260 MB).',
  415: 'Blocked file type (by content, name or declared type): HTML, JavaScript, executables, shell scripts, SVG.',
  503: 'Upload capacity busy (retry after Retry-After), or storage unavailable.',
});
const multipartQuery = (withTarget: boolean) =>
  z.object({
    fileName: uploadOptionSchemas.fileName.optional().meta({ description: 'Stored file name; default the uploaded file\'s name.' }),
    ...(withTarget ? { targetTeamMemberId: id.optional().meta({ description: 'A current member of the team the file is for.' }) } : {}),
  });
const TEAM_FILE_VISIBILITY = 'With `team.files.manage` every team file; otherwise the files the key\'s member uploaded or that are for it.';
const CONTENT = {
  description: 'The file\'s bytes (Content-Type, Content-Disposition, ETag, `X-Content-Type-Options: nosniff`). No key: the signature is the access.',
  access: 'public' as const,
  query: z.object({ expires: z.string().meta({ description: 'Unix seconds, as signed.' }), signature: z.string().meta({ description: 'HMAC-SHA256, base64url.' }) }),
  responses: { 200: { description: 'The bytes.', content: { 'application/octet-stream': z.string().meta({ format: 'binary' }) } } },
  errors: { 403: 'The signature is missing, wrong or expired (checked before the file is looked up).', 404: 'No such file (deleted).' },
};

export function teamFileOperations(paging: z.ZodObject): Record<string, OperationDoc> {
  return {
    [`GET ${base}/files`]: {
      operationId: 'listTeamFiles', summary: 'List team files', description: needs(null, TEAM_FILE_VISIBILITY), tag: 'teamFiles', access: 'teamApiKey',
      query: z.object({ uploadTeamMemberId: id.optional().meta({ description: 'Only files this member uploaded.' }), targetTeamMemberId: id.optional().meta({ description: 'Only files for this member.' }) }),
      headers: paging,
      responses: { 200: { description: 'One page of team files.', schema: fileList(teamFileSchema, 'TeamFileList') } },
      errors: { 400: 'Invalid filter or paging.' },
    },
    [`POST ${base}/files`]: {
      operationId: 'uploadTeamFileJson', summary: 'Upload a team file (JSON, base64 or a data URI)',
      description: needs('team.files.upload', 'Streamed and decoded as it arrives; above about 100 MB use the multipart route. Logged as TEAM_FILE_UPLOADED with the target member.'),
      tag: 'teamFiles', access: 'teamApiKey', bodyContent: { 'application/json': jsonUpload('TeamFileUploadRequest', true) }, bodyRequired: true,
      responses: { 201: { description: 'Stored and counted in the team storage.', schema: uploadedFileSchema } },
      errors: UPLOAD_ERRORS('targetTeamMemberId names no current member, or the team'),
    },
    [`POST ${base}/files/multipart`]: {
      operationId: 'uploadTeamFileMultipart', summary: 'Upload a team file (multipart/form-data)',
      description: needs('team.files.upload', 'Options are query parameters, so a missing target member is refused before the body. Logged as TEAM_FILE_UPLOADED.'),
      tag: 'teamFiles', access: 'teamApiKey', query: multipartQuery(true), bodyContent: { 'multipart/form-data': multipartUpload }, bodyRequired: true,
      responses: { 201: { description: 'Stored and counted in the team storage.', schema: uploadedFileSchema } },
      errors: UPLOAD_ERRORS('targetTeamMemberId names no current member, or the team'),
    },
    [`GET ${base}/files/:fileId`]: {
      operationId: 'getTeamFile', summary: 'A team file with a fresh preview link', description: needs(null, TEAM_FILE_VISIBILITY), tag: 'teamFiles', access: 'teamApiKey',
      responses: { 200: { description: 'The file.', schema: teamFileSchema } },
      errors: { 404: 'No such file, or one the key may not see.' },
    },
    [`DELETE ${base}/files/:fileId`]: {
      operationId: 'deleteTeamFile', summary: 'Delete a team file and free its storage',
      description: needs(null, 'With `team.files.manage` any team file; otherwise one the key\'s member uploaded. Logged as TEAM_FILE_DELETED with the target member.'),
      tag: 'teamFiles', access: 'teamApiKey',
      responses: { 200: { description: 'Deleted; the team\'s used storage after it.', schema: fileDeletionSchema } },
      errors: { 404: 'No such file, or one the key may not delete.' },
    },
    [`GET ${base}/files/:fileId/content`]: { operationId: 'getTeamFileContent', summary: 'A team file\'s bytes (signed preview link)', tag: 'teamFiles', ...CONTENT },

    [`GET ${base}/todo-boards`]: {
      operationId: 'listTodoBoards', summary: 'List to-do boards', description: needs('team.todos.view', 'By sort, then title.'), tag: 'todos', access: 'teamApiKey',
      responses: { 200: { description: 'Every board.', schema: z.object({ data: z.array(todoBoardSchema), count }).meta({ id: 'TodoBoardList' }) } },
      errors: {},
    },
    [`POST ${base}/todo-boards`]: {
      operationId: 'createTodoBoard', summary: 'Create a to-do board', description: needs('team.todos.manage'), tag: 'todos', access: 'teamApiKey',
      body: createBoardSchema.meta({ id: 'TodoBoardCreateRequest' }), bodyRequired: true,
      responses: { 201: { description: 'The board.', schema: todoBoardSchema } },
      errors: { ...JSON_BODY_ERRORS, 402: 'The team has maxTodoBoards boards (error.teamLimits.maxTodoBoards).' },
    },
    [`PATCH ${base}/todo-boards/:boardId`]: {
      operationId: 'updateTodoBoard', summary: 'Change a to-do board', description: needs('team.todos.manage'), tag: 'todos', access: 'teamApiKey',
      body: updateBoardSchema.meta({ id: 'TodoBoardUpdateRequest' }), bodyRequired: true,
      responses: { 200: { description: 'The board as it is now.', schema: todoBoardSchema } },
      errors: { ...JSON_BODY_ERRORS, 404: 'No such board.' },
    },
    [`DELETE ${base}/todo-boards/:boardId`]: {
      operationId: 'deleteTodoBoard', summary: 'Delete a to-do board with its to-dos and their files',
      description: needs('team.todos.manage', 'The files\' bytes are freed; each file is logged as TODO_FILE_DELETED.'), tag: 'todos', access: 'teamApiKey',
      responses: { 204: { description: 'Deleted.' } },
      errors: { 404: 'No such board.' },
    },
    [`GET ${base}/todo-boards/:boardId/todos`]: {
      operationId: 'listTodos', summary: 'List a board\'s to-dos', description: needs('team.todos.view', 'By sort, then creation.'), tag: 'todos', access: 'teamApiKey',
      query: z.object({ state: z.enum(TODO_STATES).optional(), assigneeTeamMemberId: id.optional() }),
      headers: paging,
      responses: { 200: { description: 'One page of to-dos.', schema: z.object({ data: z.array(todoSchema), count }).meta({ id: 'TodoList' }) } },
      errors: { 400: 'Invalid filter or paging.', 404: 'No such board.' },
    },
    [`POST ${base}/todo-boards/:boardId/todos`]: {
      operationId: 'createTodo', summary: 'Create a to-do', description: needs('team.todos.manage'), tag: 'todos', access: 'teamApiKey',
      body: createTodoSchema.meta({ id: 'TodoCreateRequest' }), bodyRequired: true,
      responses: { 201: { description: 'The to-do.', schema: todoSchema } },
      errors: { ...JSON_BODY_ERRORS, 402: 'The team has maxTodos to-dos (error.teamLimits.maxTodos).', 404: 'No such board, or the assignee is no current member.' },
    },
    [`GET ${base}/todos/:todoId`]: {
      operationId: 'getTodo', summary: 'A to-do', description: needs('team.todos.view'), tag: 'todos', access: 'teamApiKey',
      responses: { 200: { description: 'The to-do.', schema: todoSchema } },
      errors: { 404: 'No such to-do.' },
    },
    [`PATCH ${base}/todos/:todoId`]: {
      operationId: 'updateTodo', summary: 'Change a to-do', description: needs('team.todos.manage'), tag: 'todos', access: 'teamApiKey',
      body: updateTodoSchema.meta({ id: 'TodoUpdateRequest' }), bodyRequired: true,
      responses: { 200: { description: 'The to-do as it is now.', schema: todoSchema } },
      errors: { ...JSON_BODY_ERRORS, 404: 'No such to-do, or the assignee is no current member.' },
    },
    [`DELETE ${base}/todos/:todoId`]: {
      operationId: 'deleteTodo', summary: 'Delete a to-do with its files',
      description: needs('team.todos.manage', 'The files\' bytes are freed; each file is logged as TODO_FILE_DELETED.'), tag: 'todos', access: 'teamApiKey',
      responses: { 204: { description: 'Deleted.' } },
      errors: { 404: 'No such to-do.' },
    },
    [`GET ${base}/todos/:todoId/files`]: {
      operationId: 'listTodoFiles', summary: 'List a to-do\'s files', description: needs('team.todos.view'), tag: 'todos', access: 'teamApiKey',
      headers: paging,
      responses: { 200: { description: 'One page of the to-do\'s files.', schema: fileList(todoFileSchema, 'TodoFileList') } },
      errors: { 400: 'Invalid paging.', 404: 'No such to-do.' },
    },
    [`POST ${base}/todos/:todoId/files`]: {
      operationId: 'uploadTodoFileJson', summary: 'Upload a to-do file (JSON, base64 or a data URI)',
      description: needs('team.todos.manage', 'As a team file upload; logged as TODO_FILE_UPLOADED. A missing to-do is refused before the body.'),
      tag: 'todos', access: 'teamApiKey', bodyContent: { 'application/json': jsonUpload('TodoFileUploadRequest', false) }, bodyRequired: true,
      responses: { 201: { description: 'Stored and counted in the team storage.', schema: uploadedFileSchema } },
      errors: UPLOAD_ERRORS('The to-do'),
    },
    [`POST ${base}/todos/:todoId/files/multipart`]: {
      operationId: 'uploadTodoFileMultipart', summary: 'Upload a to-do file (multipart/form-data)',
      description: needs('team.todos.manage', 'Logged as TODO_FILE_UPLOADED.'),
      tag: 'todos', access: 'teamApiKey', query: multipartQuery(false), bodyContent: { 'multipart/form-data': multipartUpload }, bodyRequired: true,
      responses: { 201: { description: 'Stored and counted in the team storage.', schema: uploadedFileSchema } },
      errors: UPLOAD_ERRORS('The to-do'),
    },
    [`GET ${base}/todos/:todoId/files/:fileId`]: {
      operationId: 'getTodoFile', summary: 'A to-do file with a fresh preview link', description: needs('team.todos.view'), tag: 'todos', access: 'teamApiKey',
      responses: { 200: { description: 'The file.', schema: todoFileSchema } },
      errors: { 404: 'No such file of the to-do.' },
    },
    [`DELETE ${base}/todos/:todoId/files/:fileId`]: {
      operationId: 'deleteTodoFile', summary: 'Delete a to-do file and free its storage', description: needs('team.todos.manage', 'Logged as TODO_FILE_DELETED.'),
      tag: 'todos', access: 'teamApiKey',
      responses: { 200: { description: 'Deleted; the team\'s used storage after it.', schema: fileDeletionSchema } },
      errors: { 404: 'No such file of the to-do.' },
    },
    [`GET ${base}/todo-files/:fileId/content`]: { operationId: 'getTodoFileContent', summary: 'A to-do file\'s bytes (signed preview link)', tag: 'todos', ...CONTENT },
  };
}
