import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { notFound, teamLimit } from '../../errors/errors.ts';
import type { Paging } from '../paging.ts';
import { TeamMember } from '../members/team-member.entity.ts';
import type { PlanLimits } from '../plans/plan-limits.ts';
import type { AttachedFileService, DeletedFile } from '../team-files/attached-file.service.ts';
import { TODO_FILES } from '../team-files/file-kinds.ts';
import type { Actor } from '../actor.ts';
import { effectiveLimits } from '../teams/team-limits.ts';
import { Team } from '../teams/team.entity.ts';
import { isUuid, parseInput, uuid } from '../validation.ts';
import { TODO_STATES, Todo, TodoBoard } from './todo.entity.ts';

const title = (max: number) => z.string().trim().min(1).max(max);
const description = z.string().max(10_000);
const sort = z.int().min(-1_000_000).max(1_000_000);

export const createBoardSchema = z.strictObject({ title: title(100), description: description.optional(), sort: sort.optional() });
export const updateBoardSchema = createBoardSchema.partial();
export const createTodoSchema = z.strictObject({
  title: title(200),
  description: description.optional(),
  state: z.enum(TODO_STATES).optional(),
  assigneeTeamMemberId: uuid.nullable().optional(),
  dueDate: z.iso.datetime({ offset: true }).nullable().optional(),
  sort: sort.optional(),
});
export const updateTodoSchema = createTodoSchema.partial();

export interface TodoFilters {
  state?: (typeof TODO_STATES)[number];
  assigneeTeamMemberId?: string;
}

export function parseTodoFilters(query: URLSearchParams): TodoFilters {
  return parseInput(
    z.strictObject({ state: z.enum(TODO_STATES).optional(), assigneeTeamMemberId: uuid.optional() }),
    Object.fromEntries([...query.entries()].filter(([key]) => key !== 'pageNumber' && key !== 'pageSize')),
  );
}

export function boardView(board: TodoBoard) {
  return {
    id: board.id, teamId: board.team.id, title: board.title, description: board.description, sort: board.sort,
    createdAt: board.createdAt.toISOString(), updatedAt: board.updatedAt.toISOString(),
  };
}

export function todoView(todo: Todo) {
  return {
    id: todo.id, teamId: todo.team.id, boardId: todo.board.id, title: todo.title, description: todo.description, state: todo.state,
    assigneeTeamMemberId: todo.assigneeTeamMember?.id ?? null, dueDate: todo.dueDate?.toISOString() ?? null, sort: todo.sort,
    creatorTeamMemberId: todo.creatorTeamMember?.id ?? null, createdAt: todo.createdAt.toISOString(), updatedAt: todo.updatedAt.toISOString(),
  };
}

/**
 * To-do boards and to-dos, minimal but real: create, list, change, delete;
 * at most maxTodoBoards boards and maxTodos to-dos per team (402). Deleting a
 * to-do (or a board with its to-dos) deletes their files in the same
 * transaction, frees their bytes and logs TODO_FILE_DELETED for each; the
 * objects are removed after the commit.
 */
export class TodoService {
  private readonly orm: MikroORM;
  private readonly files: AttachedFileService;

  constructor(options: { orm: MikroORM; files: AttachedFileService }) {
    this.orm = options.orm;
    this.files = options.files;
  }

  async listBoards(teamId: string) {
    const boards = await this.orm.em.fork().find(TodoBoard, { team: teamId }, { orderBy: [{ sort: 'asc' }, { title: 'asc' }, { id: 'asc' }] });
    return { data: boards.map(boardView), count: boards.length };
  }

  async createBoard(teamId: string, input: unknown) {
    const body = parseInput(createBoardSchema, input);
    return this.orm.em.fork().transactional(async (em) => {
      const team = await this.lockTeam(em, teamId);
      await this.checkLimit(em, team, 'maxTodoBoards', TodoBoard, 'to-do boards');
      const board = em.create(TodoBoard, { team, title: body.title, description: body.description ?? '', sort: body.sort ?? 0 });
      await em.flush();
      return boardView(board);
    });
  }

  async updateBoard(teamId: string, boardId: string, input: unknown) {
    const body = parseInput(updateBoardSchema, input);
    const em = this.orm.em.fork();
    const board = await this.board(em, teamId, boardId);
    em.assign(board, body);
    await em.flush();
    return boardView(board);
  }

  async deleteBoard(teamId: string, boardId: string, actor: Actor): Promise<void> {
    const deleted = await this.orm.em.fork().transactional(async (em) => {
      await this.lockTeam(em, teamId);
      const board = await this.board(em, teamId, boardId, true);
      const files = await this.deleteFilesOf(em, teamId, 'todo_id in (select id from todo where board_id = ?)', [board.id], actor);
      await em.execute('delete from todo where board_id = ?', [board.id]);
      em.remove(board);
      await em.flush();
      return files;
    });
    await this.files.removeObjects(teamId, deleted);
  }

  async listTodos(teamId: string, boardId: string, filters: TodoFilters, paging: Paging) {
    const em = this.orm.em.fork();
    const board = await this.board(em, teamId, boardId);
    const where = {
      board, ...(filters.state ? { state: filters.state } : {}), ...(filters.assigneeTeamMemberId ? { assigneeTeamMember: filters.assigneeTeamMemberId } : {}),
    };
    const [todos, count] = await em.findAndCount(Todo, where, {
      orderBy: [{ sort: 'asc' }, { createdAt: 'asc' }, { id: 'asc' }], limit: paging.pageSize, offset: (paging.pageNumber - 1) * paging.pageSize,
    });
    return { data: todos.map(todoView), count };
  }

  async createTodo(teamId: string, boardId: string, input: unknown, actor: Actor) {
    const body = parseInput(createTodoSchema, input);
    return this.orm.em.fork().transactional(async (em) => {
      const team = await this.lockTeam(em, teamId);
      const board = await this.board(em, teamId, boardId);
      await this.checkLimit(em, team, 'maxTodos', Todo, 'to-dos');
      const todo = em.create(Todo, {
        team, board, title: body.title, description: body.description ?? '', state: body.state ?? 'open',
        assigneeTeamMember: await this.assignee(em, teamId, body.assigneeTeamMemberId ?? null),
        dueDate: body.dueDate ? new Date(body.dueDate) : null, sort: body.sort ?? 0,
        creatorTeamMember: actor.teamMemberId ? em.getReference(TeamMember, actor.teamMemberId) : null,
      });
      await em.flush();
      return todoView(todo);
    });
  }

  async getTodo(teamId: string, todoId: string) {
    return todoView(await this.todo(this.orm.em.fork(), teamId, todoId));
  }

  async updateTodo(teamId: string, todoId: string, input: unknown) {
    const body = parseInput(updateTodoSchema, input);
    const em = this.orm.em.fork();
    const todo = await this.todo(em, teamId, todoId);
    if (body.title !== undefined) todo.title = body.title;
    if (body.description !== undefined) todo.description = body.description;
    if (body.state !== undefined) todo.state = body.state;
    if (body.sort !== undefined) todo.sort = body.sort;
    if (body.dueDate !== undefined) todo.dueDate = body.dueDate === null ? null : new Date(body.dueDate);
    if (body.assigneeTeamMemberId !== undefined) todo.assigneeTeamMember = await this.assignee(em, teamId, body.assigneeTeamMemberId);
    await em.flush();
    return todoView(todo);
  }

  async deleteTodo(teamId: string, todoId: string, actor: Actor): Promise<void> {
    const deleted = await this.orm.em.fork().transactional(async (em) => {
      // The team row first, then the to-do FOR UPDATE: the lock order of a to-do file's commit (team, then the to-do FOR KEY SHARE),
      // so a commit either lands before (and its file goes with the to-do) or finds the to-do gone (404).
      await this.lockTeam(em, teamId);
      const todo = await this.todo(em, teamId, todoId, true);
      const files = await this.deleteFilesOf(em, teamId, 'todo_id = ?', [todo.id], actor);
      em.remove(todo);
      await em.flush();
      return files;
    });
    await this.files.removeObjects(teamId, deleted);
  }

  /** The to-do files matching `condition` go, with their bytes, in the caller's transaction. */
  private async deleteFilesOf(em: EntityManager, teamId: string, condition: string, params: unknown[], actor: Actor): Promise<DeletedFile[]> {
    const files = await this.files.deleteRows(em, TODO_FILES, teamId, condition, params, actor);
    if (files.length > 0) await this.files.free(em, teamId, files);
    return files;
  }

  private async lockTeam(em: EntityManager, teamId: string): Promise<Team> {
    // The team row serialises creations of one team, so concurrent ones cannot pass the limit.
    const rows = await em.execute('select id from team where id = ? for no key update', [teamId]);
    if (rows.length === 0) throw notFound('team', teamId);
    return em.findOneOrFail(Team, { id: teamId }, { populate: ['plan'] });
  }

  private async checkLimit(em: EntityManager, team: Team, key: keyof PlanLimits & ('maxTodoBoards' | 'maxTodos'), entity: typeof TodoBoard | typeof Todo, what: string) {
    const limit = effectiveLimits(team.plan?.limits, team.limitOverrides)[key];
    if (limit !== null && (await em.count(entity, { team })) >= limit) throw teamLimit(key, `The team has reached the limit of ${limit} ${what}`, limit);
  }

  private async assignee(em: EntityManager, teamId: string, memberId: string | null): Promise<TeamMember | null> {
    if (memberId === null) return null;
    const member = await em.findOne(TeamMember, { id: memberId.toLowerCase(), team: teamId, leftTeamAt: null });
    if (!member) throw notFound('team member', memberId);
    return member;
  }

  private async board(em: EntityManager, teamId: string, boardId: string, lock = false): Promise<TodoBoard> {
    if (lock && isUuid(boardId)) await em.execute('select id from todo where board_id = ? and team_id = ? for update', [boardId, teamId]);
    const board = isUuid(boardId) ? await em.findOne(TodoBoard, { id: boardId, team: teamId }) : null;
    if (!board) throw notFound('to-do board', boardId);
    return board;
  }

  private async todo(em: EntityManager, teamId: string, todoId: string, lock = false): Promise<Todo> {
    if (lock && isUuid(todoId)) await em.execute('select id from todo where id = ? and team_id = ? for update', [todoId, teamId]);
    const todo = isUuid(todoId) ? await em.findOne(Todo, { id: todoId, team: teamId }) : null;
    if (!todo) throw notFound('to-do', todoId);
    return todo;
  }
}
