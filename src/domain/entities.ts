import { ApiKey } from './api-keys/api-key.entity.ts';
import { Automation, AutomationDelivery } from './automations/automation.entity.ts';
import { BaseSchema } from './base.entity.ts';
import { MediaFolder } from './folders/media-folder.entity.ts';
import { Group } from './groups/group.entity.ts';
import { MediaFile } from './media/media-file.entity.ts';
import { MediaServedDaily } from './media/media-served-daily.entity.ts';
import { MediaTagCount } from './media/media-tag-count.entity.ts';
import { TeamMemberNote } from './members/member-note.entity.ts';
import { TeamModule } from './modules/team-module.entity.ts';
import { Invite } from './invites/invite.entity.ts';
import { TeamMember, TeamMemberGroup } from './members/team-member.entity.ts';
import { Plan } from './plans/plan.entity.ts';
import { TeamLog } from './team-logs/team-log.entity.ts';
import { Team } from './teams/team.entity.ts';
import { MediaEvent } from './media/media-event.entity.ts';
import { MediaUsageDaily } from './usage/media-usage-daily.entity.ts';
import { UploadReservation } from './usage/upload-reservation.entity.ts';
import { User } from './users/user.entity.ts';
import { Subscription } from './subscriptions/subscription.entity.ts';
import { Todo, TodoBoard } from './todos/todo.entity.ts';
import { Account } from './accounts/account.entity.ts';
import { UserSession } from './sessions/user-session.entity.ts';
import { OAuthState } from './accounts/oauth-state.entity.ts';
import { Meeting, MeetingGroup, MeetingMember } from './meetings/meeting.entity.ts';
import { Logoff } from './logoffs/logoff.entity.ts';
import { PenaltyPoint } from './penalty-points/penalty-point.entity.ts';
import { WorryBoxEntry } from './worry-box/worry-box-entry.entity.ts';
import { TeamTag, TeamTagTodo } from './team-tags/team-tag.entity.ts';
import { TeamAccess, TeamAccessAssignment, TeamAccessGroupAssignment } from './accesses/team-access.entity.ts';
import { News, NewsGroup, TeamNewsBanner } from './news/news.entity.ts';
import { Link } from './links/link.entity.ts';
import { PortalEnvironment } from './portal/portal-environment.entity.ts';

export const entities = [BaseSchema, Plan, Team, User, Group, TeamMember, TeamMemberGroup, ApiKey, MediaFolder, MediaFile, TeamLog,
  UploadReservation, MediaEvent, MediaUsageDaily, MediaServedDaily, MediaTagCount, Automation, AutomationDelivery,
  TeamMemberNote, TeamModule, Invite, Subscription, TodoBoard, Todo, Account, UserSession,
  OAuthState, Meeting, MeetingMember, MeetingGroup, Logoff,
  PenaltyPoint, WorryBoxEntry, TeamTag, TeamTagTodo, TeamAccess, TeamAccessAssignment, TeamAccessGroupAssignment,
  News, NewsGroup, TeamNewsBanner, Link, PortalEnvironment];
