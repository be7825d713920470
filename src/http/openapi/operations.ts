import { accountOperations } from './account-operations.ts';
import { automationOperations } from './automation-operations.ts';
import { fileOperations, mediaBase, mediaOperations } from './media-operations.ts';
import { paging, type OperationDoc } from './operation-doc.ts';
import { notificationOperations } from './notification-operations.ts';
import { operatorOperations } from './operator-operations.ts';
import { serviceOperations } from './service-operations.ts';
import { teamFileOperations } from './team-file-operations.ts';
import { meetingOperations } from './meeting-operations.ts';
import { newsLinkPortalOperations } from './news-link-portal-operations.ts';
import { teamAdminOperations } from './team-operations.ts';
import { tusOperations } from './tus-operations.ts';
import { uploadUrlOperations } from './upload-url-operations.ts';
import { userOperations } from './user-operations.ts';
import { verificationOperations } from './verification-operations.ts';
import { workspacePeopleOperations } from './workspace-people-operations.ts';

/**
 * The description of every route, keyed `<METHOD> <pattern>` exactly as the
 * route declares itself (src/http/routes). Request bodies are the very zod
 * schemas the services validate with; response bodies are in ./schemas.ts.
 * test/integration/openapi.test.ts fails while a mounted route has no entry
 * here or an entry names no mounted route; docs/design.md says how to add one.
 */
export const operations: Record<string, OperationDoc> = {
  ...mediaOperations,
  ...uploadUrlOperations(mediaBase),
  ...tusOperations,
  ...fileOperations,
  ...automationOperations('/v1/teams/:teamId/automations', 'team'),
  ...teamAdminOperations(paging),
  ...teamFileOperations(paging),
  ...meetingOperations(paging),
  ...workspacePeopleOperations(paging),
  ...newsLinkPortalOperations(paging),
  ...operatorOperations,
  ...userOperations,
  ...notificationOperations,
  ...accountOperations,
  ...verificationOperations,
  ...automationOperations('/v1/admin/teams/:teamId/automations', 'operator'),
  ...serviceOperations,
};
