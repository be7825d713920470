import { defineEntity, p } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { Team } from '../teams/team.entity.ts';
import { Todo } from '../todos/todo.entity.ts';

/** TeamTag of spec 2.16 (not a media tag): a named label of the team, its slug unique in the team. */
export const TeamTagSchema = defineEntity({
  name: 'TeamTag',
  uniques: [{ name: 'team_tag_team_slug_unique', properties: ['team', 'slug'] }],
  properties: {
    id: p.uuid().primary().onCreate(() => randomUUID()),
    team: () => p.manyToOne(Team).deleteRule('cascade'),
    name: p.string().length(64).check('length(name) >= 1'),
    slug: p.string().length(64).check("slug ~ '^[a-z0-9]+(-[a-z0-9]+)*$'"),
    color: p.string().length(7).nullable(),
    icon: p.string().length(64).nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});

export class TeamTag extends TeamTagSchema.class {}
TeamTagSchema.setClass(TeamTag);

/** A team tag on a to-do; goes with either. */
export const TeamTagTodoSchema = defineEntity({
  name: 'TeamTagTodo',
  properties: {
    tag: () => p.manyToOne(TeamTag).primary().deleteRule('cascade'),
    todo: () => p.manyToOne(Todo).primary().deleteRule('cascade').index(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});

export class TeamTagTodo extends TeamTagTodoSchema.class {}
TeamTagTodoSchema.setClass(TeamTagTodo);
