import { defineEntity, p } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { TeamMember } from '../members/team-member.entity.ts';
import { Team } from '../teams/team.entity.ts';

export const TODO_STATES = ['open', 'in_progress', 'done'] as const;
export type TodoState = (typeof TODO_STATES)[number];

/** A to-do board of a team (Migration20261124050000TeamFiles); at most maxTodoBoards per team. */
export const TodoBoardSchema = defineEntity({
  name: 'TodoBoard',
  properties: {
    id: p.uuid().primary().onCreate(() => randomUUID()),
    team: () => p.manyToOne(Team).deleteRule('cascade').index(),
    title: p.string().length(100),
    description: p.text().default(''),
    sort: p.integer().default(0),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});

export class TodoBoard extends TodoBoardSchema.class {}
TodoBoardSchema.setClass(TodoBoard);

/** A to-do on a board; at most maxTodos per team. Its files (todo_file) are deleted, and their bytes freed, with it. */
export const TodoSchema = defineEntity({
  name: 'Todo',
  properties: {
    id: p.uuid().primary().onCreate(() => randomUUID()),
    team: () => p.manyToOne(Team).deleteRule('cascade').index(),
    board: () => p.manyToOne(TodoBoard).deleteRule('cascade'),
    title: p.string().length(200),
    description: p.text().default(''),
    state: p.string().length(16).default('open'),
    assigneeTeamMember: () => p.manyToOne(TeamMember).nullable().deleteRule('set null'),
    dueDate: p.datetime().nullable(),
    sort: p.integer().default(0),
    creatorTeamMember: () => p.manyToOne(TeamMember).nullable().deleteRule('set null'),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});

export class Todo extends TodoSchema.class {}
TodoSchema.setClass(Todo);
