import type { MigrationObject } from '@mikro-orm/core';
import { Migration20261121000000Initial } from './Migration20261121000000Initial.ts';
import { Migration20261121010000Uploads } from './Migration20261121010000Uploads.ts';
import { Migration20261121020000MediaSearch } from './Migration20261121020000MediaSearch.ts';
import { Migration20261121030000FolderSweep } from './Migration20261121030000FolderSweep.ts';
import { Migration20261121040000ServedTraffic } from './Migration20261121040000ServedTraffic.ts';
import { Migration20261121050000TagCounts } from './Migration20261121050000TagCounts.ts';
import { Migration20261121060000Automations } from './Migration20261121060000Automations.ts';
import { Migration20261123020000LimitOverridesObject } from './Migration20261123020000LimitOverridesObject.ts';
import { Migration20261123030000InstanceReservations } from './Migration20261123030000InstanceReservations.ts';
import { Migration20261123040000GroupCommit } from './Migration20261123040000GroupCommit.ts';
import { Migration20261123050000TeamAdmin } from './Migration20261123050000TeamAdmin.ts';
import { Migration20261123060000MemberNotes } from './Migration20261123060000MemberNotes.ts';
import { Migration20261123070000TeamModules } from './Migration20261123070000TeamModules.ts';
import { Migration20261123080000Invites } from './Migration20261123080000Invites.ts';
import { Migration20261124010000IdempotencyKeys } from './Migration20261124010000IdempotencyKeys.ts';
import { Migration20261124020000UploadUrls } from './Migration20261124020000UploadUrls.ts';
import { Migration20261124030000TusUploads } from './Migration20261124030000TusUploads.ts';
import { Migration20261124040000Subscriptions } from './Migration20261124040000Subscriptions.ts';
import { Migration20261124040100ActiveMemberNames } from './Migration20261124040100ActiveMemberNames.ts';
import { Migration20261124050000TeamFiles } from './Migration20261124050000TeamFiles.ts';
import { Migration20261124060000Accounts } from './Migration20261124060000Accounts.ts';

/** Every migration in order; listed here rather than discovered so that type stripping needs no loader. */
export const migrations: MigrationObject[] = [
  { name: 'Migration20261121000000Initial', class: Migration20261121000000Initial },
  { name: 'Migration20261121010000Uploads', class: Migration20261121010000Uploads },
  { name: 'Migration20261121020000MediaSearch', class: Migration20261121020000MediaSearch },
  { name: 'Migration20261121030000FolderSweep', class: Migration20261121030000FolderSweep },
  { name: 'Migration20261121040000ServedTraffic', class: Migration20261121040000ServedTraffic },
  { name: 'Migration20261121050000TagCounts', class: Migration20261121050000TagCounts },
  { name: 'Migration20261121060000Automations', class: Migration20261121060000Automations },
  { name: 'Migration20261123020000LimitOverridesObject', class: Migration20261123020000LimitOverridesObject },
  { name: 'Migration20261123030000InstanceReservations', class: Migration20261123030000InstanceReservations },
  { name: 'Migration20261123040000GroupCommit', class: Migration20261123040000GroupCommit },
  { name: 'Migration20261123050000TeamAdmin', class: Migration20261123050000TeamAdmin },
  { name: 'Migration20261123060000MemberNotes', class: Migration20261123060000MemberNotes },
  { name: 'Migration20261123070000TeamModules', class: Migration20261123070000TeamModules },
  { name: 'Migration20261123080000Invites', class: Migration20261123080000Invites },
  { name: 'Migration20261124010000IdempotencyKeys', class: Migration20261124010000IdempotencyKeys },
  { name: 'Migration20261124020000UploadUrls', class: Migration20261124020000UploadUrls },
  { name: 'Migration20261124030000TusUploads', class: Migration20261124030000TusUploads },
  { name: 'Migration20261124040000Subscriptions', class: Migration20261124040000Subscriptions },
  { name: 'Migration20261124040100ActiveMemberNames', class: Migration20261124040100ActiveMemberNames },
  { name: 'Migration20261124050000TeamFiles', class: Migration20261124050000TeamFiles },
  { name: 'Migration20261124060000Accounts', class: Migration20261124060000Accounts },
];
