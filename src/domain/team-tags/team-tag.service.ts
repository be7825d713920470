import { ForeignKeyConstraintViolationException, UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { Permission } from '../../auth/permissions.ts';
import { conflict, forbidden, notFound } from '../../errors/errors.ts';
import type { Caller } from '../members/member-admin.service.ts';
import type { Paging } from '../paging.ts';
import { Team } from '../teams/team.entity.ts';
import { Todo } from '../todos/todo.entity.ts';
import { isUuid, parseInput, uuid } from '../validation.ts';
import { tagSlug } from './tag-slug.ts';
import { TeamTag, TeamTagTodo } from './team-tag.entity.ts';

const color = z.string().regex(/^#([A-Fa-f0-9]{6}|[A-Fa-f0-9]{3})$/, 'must be #rgb or #rrggbb');
const icon = z.string().trim().min(1).max(64);

export const createTagSchema = z.strictObject({
  name: z.string().trim().min(1).max(64).meta({ description: 'Its slug (lower case, dashes) must be unique in the team: 409 otherwise.' }),
  color: color.nullable().optional(),
  icon: icon.nullable().optional(),
  todoId: uuid.optional().meta({ description: 'A to-do of the team to attach the new tag to; needs team.todos.manage too.' }),
  supportIssueId: z.null().optional().meta({ description: 'This service has no support issues: only null is accepted (400 otherwise).' }),
});

export const updateTagSchema = z.strictObject({ name: createTagSchema.shape.name, color: color.nullable(), icon: icon.nullable() }).partial();

export const tagFilterSchema = z.strictObject({ todoId: uuid.optional().meta({ description: 'Only the tags on this to-do.' }) });

export function parseTagFilters(query: URLSearchParams): { todoId?: string } {
  const parsed = parseInput(tagFilterSchema, Object.fromEntries([...query.entries()].filter(([key]) => key !== 'pageNumber' && key !== 'pageSize')));
  return parsed.todoId ? { todoId: parsed.todoId.toLowerCase() } : {};
}

function tagView(tag: TeamTag) {
  return {
    id: tag.id, teamId: tag.team.id, name: tag.name, slug: tag.slug, color: tag.color ?? null, icon: tag.icon ?? null,
    createdAt: tag.createdAt.toISOString(), updatedAt: tag.updatedAt.toISOString(),
  };
}

/**
 * Team tags (spec 2.16 TeamTag; the media library's tags are another thing): labels of the team
 * with a slug unique in the team (the unique index decides between racing creations: 409), put on
 * to-dos. Nothing here is in the team log: spec 2.19 has no action for tags.
 */
export class TeamTagService {
  private readonly orm: MikroORM;

  constructor(options: { orm: MikroORM }) {
    this.orm = options.orm;
  }

  /** The team's tags by name, or those on one to-do. */
  async list(teamId: string, filters: { todoId?: string }, paging: Paging) {
    const em = this.orm.em.fork();
    // A to-do carries a handful of tags: their ids first, then the page.
    const onTodo = filters.todoId ? (await em.find(TeamTagTodo, { todo: await this.todo(em, teamId, filters.todoId) })).map((attached) => attached.tag.id) : null;
    const where = { team: teamId, ...(onTodo && { id: { $in: onTodo } }) };
    const [tags, count] = await em.findAndCount(TeamTag, where, {
      orderBy: [{ name: 'asc' }, { id: 'asc' }], limit: paging.pageSize, offset: (paging.pageNumber - 1) * paging.pageSize,
    });
    return { data: tags.map(tagView), count };
  }

  async get(teamId: string, tagId: string) {
    return tagView(await this.tag(this.orm.em.fork(), teamId, tagId));
  }

  async create(teamId: string, input: unknown, caller: Caller) {
    const body = parseInput(createTagSchema, input);
    const slug = tagSlug(body.name);
    if (body.todoId && !caller.permissions.has(Permission.todosManage)) {
      throw forbidden(`Attaching a tag to a to-do needs ${Permission.todosManage}`, Permission.todosManage);
    }
    return this.uniqueSlug(slug, () => this.orm.em.fork().transactional(async (em) => {
      const todo = body.todoId ? await this.todo(em, teamId, body.todoId) : null;
      const tag = em.create(TeamTag, { team: em.getReference(Team, teamId), name: body.name, slug, color: body.color ?? null, icon: body.icon ?? null });
      if (todo) em.create(TeamTagTodo, { tag, todo });
      await em.flush();
      return tagView(tag);
    }));
  }

  async update(teamId: string, tagId: string, input: unknown) {
    const body = parseInput(updateTagSchema, input);
    const slug = body.name === undefined ? undefined : tagSlug(body.name);
    return this.uniqueSlug(slug ?? '', async () => {
      const em = this.orm.em.fork();
      const tag = await this.tag(em, teamId, tagId);
      if (body.name !== undefined) Object.assign(tag, { name: body.name, slug });
      if (body.color !== undefined) tag.color = body.color;
      if (body.icon !== undefined) tag.icon = body.icon;
      await em.flush();
      return tagView(tag);
    });
  }

  async delete(teamId: string, tagId: string): Promise<void> {
    const deleted = isUuid(tagId) ? await this.orm.em.fork().nativeDelete(TeamTag, { id: tagId.toLowerCase(), team: teamId }) : 0;
    if (deleted === 0) throw notFound('team tag', tagId);
  }

  /** Puts the tag on the to-do; again is a no-op. */
  async attach(teamId: string, todoId: string, tagId: string): Promise<void> {
    const em = this.orm.em.fork();
    const todo = await this.todo(em, teamId, todoId);
    const tag = await this.tag(em, teamId, tagId);
    try {
      await em.execute('insert into team_tag_todo (tag_id, todo_id, created_at) values (?, ?, ?) on conflict do nothing', [tag.id, todo.id, new Date()]);
    } catch (error) {
      // The to-do or the tag deleted meanwhile: the same 404 as finding it gone.
      if (error instanceof ForeignKeyConstraintViolationException) throw notFound('to-do or team tag', `${todoId}/${tagId}`);
      throw error;
    }
  }

  /** Takes the tag off the to-do; a tag that is not on it is a no-op. */
  async detach(teamId: string, todoId: string, tagId: string): Promise<void> {
    const em = this.orm.em.fork();
    const todo = await this.todo(em, teamId, todoId);
    const tag = await this.tag(em, teamId, tagId);
    await em.nativeDelete(TeamTagTodo, { tag, todo });
  }

  private async uniqueSlug<T>(slug: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException) throw conflict(`The team has a tag with the slug ${slug}`, slug);
      throw error;
    }
  }

  private async tag(em: EntityManager, teamId: string, tagId: string): Promise<TeamTag> {
    const tag = isUuid(tagId) ? await em.findOne(TeamTag, { id: tagId.toLowerCase(), team: teamId }) : null;
    if (!tag) throw notFound('team tag', tagId);
    return tag;
  }

  private async todo(em: EntityManager, teamId: string, todoId: string): Promise<Todo> {
    const todo = isUuid(todoId) ? await em.findOne(Todo, { id: todoId.toLowerCase(), team: teamId }) : null;
    if (!todo) throw notFound('to-do', todoId);
    return todo;
  }
}
