/** A numeric limit; null means unlimited. */
export type Limit = number | null;

/** PlanLimits of spec section 2.12, plus the media file size cap of the operator contract. */
export interface PlanLimits {
  maxMembers: Limit;
  maxGroups: Limit;
  maxLinks: Limit;
  maxMemberNotes: Limit;
  maxNews: Limit;
  maxPlannedMeetings: Limit;
  meetingArchive: Limit;
  maxDepartments: Limit;
  maxDepartmentManager: Limit;
  maxAutomations: Limit;
  maxGames: Limit;
  gameTokens: Limit;
  maxDiscordEmbeds: Limit;
  maxDiscordTeamListEmbeds: Limit;
  maxVoiceChannels: Limit;
  maxVoiceUsers: Limit;
  maxBackupJobs: Limit;
  maxBackupTasks: Limit;
  maxDailyScheduledBackupTasks: Limit;
  /** KiB, as in the spec: 97656 KiB is about 100 MB. */
  maxTeamStorage: Limit;
  maxSupportCategories: Limit;
  maxTodos: Limit;
  maxTodoBoards: Limit;
  teamProfileModule: boolean;
  departmentAdditionalSettings: boolean;
  customPortalDomain: boolean;
  whiteLabelWebhooks: boolean;
  customWebhooks: boolean;
  multiUseInvites: boolean;
  customerDiscordRoleId: string;
  /** Bytes. */
  maxMediaFileSize: Limit;
}

export const MB = 1_000_000;

export const defaultPlanLimits: PlanLimits = {
  maxMembers: 25,
  maxGroups: 8,
  maxLinks: 2,
  maxMemberNotes: 3,
  maxNews: 3,
  maxPlannedMeetings: 4,
  meetingArchive: 1,
  maxDepartments: 2,
  maxDepartmentManager: 1,
  maxAutomations: 4,
  maxGames: 1,
  gameTokens: 200,
  maxDiscordEmbeds: 3,
  maxDiscordTeamListEmbeds: 1,
  maxVoiceChannels: 1,
  maxVoiceUsers: 32,
  maxBackupJobs: 1,
  maxBackupTasks: 7,
  maxDailyScheduledBackupTasks: 1,
  maxTeamStorage: 97656,
  maxSupportCategories: 3,
  maxTodos: 50,
  maxTodoBoards: 1,
  teamProfileModule: false,
  departmentAdditionalSettings: false,
  customPortalDomain: false,
  whiteLabelWebhooks: false,
  customWebhooks: false,
  multiUseInvites: false,
  customerDiscordRoleId: '',
  maxMediaFileSize: 10 * MB,
};

export type PlanLimitKey = keyof PlanLimits;

export const booleanLimitKeys = [
  'teamProfileModule', 'departmentAdditionalSettings', 'customPortalDomain', 'whiteLabelWebhooks', 'customWebhooks', 'multiUseInvites',
] as const satisfies PlanLimitKey[];
