import { defineEntity, p } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { Group } from '../groups/group.entity.ts';
import { TeamMember } from '../members/team-member.entity.ts';
import { Team } from '../teams/team.entity.ts';

/**
 * WorryBox of spec 2.15: a message from a member to a group of the team. An anonymous entry has
 * no teamMember at all; only authorTag (an HMAC of the author's member id under a key derived from
 * the server secret, worry-box-author.ts) lets its author find it again. A named entry has its
 * teamMember and no authorTag, so a named entry never links an author to its anonymous ones.
 * The check constraint worry_box_entry_author_check holds exactly one of the two.
 */
export const WorryBoxEntrySchema = defineEntity({
  name: 'WorryBoxEntry',
  indexes: [
    { name: 'worry_box_entry_group_created_idx', properties: ['team', 'forGroup', 'createdAt'] },
    { name: 'worry_box_entry_author_tag_idx', properties: ['team', 'authorTag'] },
    { name: 'worry_box_entry_member_idx', properties: ['teamMember'] },
  ],
  properties: {
    id: p.uuid().primary().onCreate(() => randomUUID()),
    team: () => p.manyToOne(Team).deleteRule('cascade'),
    teamMember: () => p.manyToOne(TeamMember).nullable().deleteRule('cascade'),
    authorTag: p.string().length(64).nullable(),
    isAnonymous: p.boolean(),
    message: p.text().check('length(message) >= 1'),
    forGroup: () => p.manyToOne(Group).deleteRule('cascade'),
    createdAt: p.datetime().onCreate(() => new Date()),
    answeredAt: p.datetime().nullable(),
    answer: p.text().nullable(),
    handledByTeamMember: () => p.manyToOne(TeamMember).nullable().deleteRule('set null'),
  },
});

export class WorryBoxEntry extends WorryBoxEntrySchema.class {}
WorryBoxEntrySchema.setClass(WorryBoxEntry);
