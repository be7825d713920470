import { z } from 'zod';
import { DELIVERY_STATUSES } from '../../domain/automations/automation.entity.ts';
import { createSchema as automationCreateSchema, updateSchema as automationUpdateSchema } from '../../domain/automations/automation.service.ts';
import { JSON_BODY_ERRORS } from './common-errors.ts';
import { paging, teamRoute, type Access, type OperationDoc, type Tag } from './operation-doc.ts';
import { automationListSchema, automationSchema, automationWithSecretSchema, deliveryListSchema, deliverySchema, retriedSchema } from './schemas.ts';

const automationCreateBody = automationCreateSchema.meta({ id: 'AutomationCreateRequest' });
const automationUpdateBody = automationUpdateSchema.meta({ id: 'AutomationUpdateRequest' });

/** The automation route table (automation-routes.ts) under `base`, for the team key or the operator. */
export function automationOperations(base: string, family: 'team' | 'operator'): Record<string, OperationDoc> {
  const operator = family === 'operator';
  const tag: Tag = operator ? 'operatorAutomations' : 'automations';
  const access: Access = operator ? 'authSecret' : 'teamApiKey';
  const id = (name: string) => (operator ? `operator${name[0]!.toUpperCase()}${name.slice(1)}` : name);
  const who = operator ? 'Operator secret; any team.' : teamRoute('team.automations.manage');
  const notFound = 'No such team, automation or delivery.';
  return {
    [`GET ${base}`]: {
      operationId: id('listAutomations'), summary: 'List automations', description: who, tag, access,
      responses: { 200: { description: 'Oldest first.', schema: automationListSchema } },
      errors: { 404: notFound },
    },
    [`POST ${base}`]: {
      operationId: id('createAutomation'), summary: 'Create an automation', description: `${who} At most maxAutomations per team.`, tag, access,
      body: automationCreateBody,
      bodyRequired: true,
      responses: { 201: { description: 'Created; secret is shown only here and on rotation.', schema: automationWithSecretSchema } },
      errors: { ...JSON_BODY_ERRORS, 400: 'Invalid field or target URL.', 402: 'The team has reached maxAutomations.', 404: 'No such team or folder.' },
    },
    [`GET ${base}/:automationId`]: {
      operationId: id('getAutomation'), summary: 'Get an automation', description: who, tag, access,
      responses: { 200: { description: 'The automation.', schema: automationSchema } },
      errors: { 404: notFound },
    },
    [`PATCH ${base}/:automationId`]: {
      operationId: id('updateAutomation'), summary: 'Change an automation', description: who, tag, access,
      body: automationUpdateBody,
      bodyRequired: true,
      responses: { 200: { description: 'The automation as it is now.', schema: automationSchema } },
      errors: { ...JSON_BODY_ERRORS, 400: 'Invalid field or target URL; an empty body.', 404: 'No such team, automation or folder.' },
    },
    [`DELETE ${base}/:automationId`]: {
      operationId: id('deleteAutomation'), summary: 'Delete an automation and its deliveries', description: who, tag, access,
      responses: { 204: { description: 'Deleted.' } },
      errors: { 404: notFound },
    },
    [`POST ${base}/:automationId/rotate-secret`]: {
      operationId: id('rotateAutomationSecret'), summary: 'Give an automation a new signing secret', description: who, tag, access,
      responses: { 200: { description: 'The automation with its new secret.', schema: automationWithSecretSchema } },
      errors: { 404: notFound },
    },
    [`POST ${base}/:automationId/test`]: {
      operationId: id('testAutomation'), summary: 'Send a test message to an automation\'s target',
      description: `${who} Queues one delivery of an automation.test event (data {automation: {id, name}}) for this target only, sent, signed and retried like any delivery; `
        + 'follow it in the delivery list.',
      tag, access,
      responses: { 201: { description: 'The delivery, pending.', schema: deliverySchema } },
      errors: { 404: notFound, 409: 'The automation is disabled.' },
    },
    [`GET ${base}/:automationId/deliveries`]: {
      operationId: id('listDeliveries'), summary: 'List an automation\'s deliveries', description: `${who} Newest first; paged by headers.`, tag, access,
      query: z.object({ status: z.enum(DELIVERY_STATUSES).optional() }),
      headers: paging,
      responses: { 200: { description: 'One page of deliveries.', schema: deliveryListSchema } },
      errors: { 400: 'Invalid status or paging header.', 404: notFound },
    },
    [`POST ${base}/:automationId/deliveries/retry-failed`]: {
      operationId: id('retryFailedDeliveries'), summary: 'Queue every failed delivery again', description: who, tag, access,
      responses: { 200: { description: 'How many were queued.', schema: retriedSchema } },
      errors: { 404: notFound },
    },
    [`POST ${base}/:automationId/deliveries/:deliveryId/retry`]: {
      operationId: id('retryDelivery'), summary: 'Queue one failed delivery again', description: who, tag, access,
      responses: { 200: { description: 'The delivery, pending again.', schema: deliverySchema } },
      errors: { 404: notFound, 409: 'The delivery has not failed.' },
    },
  };
}
