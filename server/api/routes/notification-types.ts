// Notification types (management): create, list, get, soft delete, restore, and the three setters.
import { z } from 'zod';
import { defineRoute } from '../route.ts';
import {
  CreateNotificationTypeRequest,
  NotificationTypeListQuery,
  NotificationTypeParams,
  NotificationTypeResponse,
  SetOptOutPolicyRequest,
  SetQuietHoursBypassRequest,
  SetVariablesRequest,
  UpdateChannelDefaultsRequest,
} from '../../schemas/notification-types.ts';
import { Workflow } from '../../schemas/workflows.ts';
import {
  createNotificationType,
  deleteNotificationType,
  getNotificationType,
  listNotificationTypes,
  restoreNotificationType,
  setOptOutPolicy,
  setQuietHoursBypass,
  setVariables,
  setWorkflow,
  toNotificationTypeResponse,
  updateChannelDefaults,
} from '../../resources/notification-types.ts';

const tag = 'notification types';

export const create = defineRoute({
  method: 'POST',
  path: '/v1/notification-types',
  summary: 'Create a notification type',
  tag,
  auth: 'management',
  body: CreateNotificationTypeRequest,
  responses: { 201: NotificationTypeResponse },
  errors: [409],
  handler: async ({ em, auth, body }) =>
    toNotificationTypeResponse(await createNotificationType(em, auth!.tenantId, body)),
});

export const list = defineRoute({
  method: 'GET',
  path: '/v1/notification-types',
  summary: 'List notification types (deleted ones only with include_deleted=true)',
  tag,
  auth: 'management',
  query: NotificationTypeListQuery,
  responses: { 200: z.array(NotificationTypeResponse) },
  handler: async ({ em, auth, query }) =>
    (await listNotificationTypes(em, auth!.tenantId, query.include_deleted)).map(toNotificationTypeResponse),
});

export const get = defineRoute({
  method: 'GET',
  path: '/v1/notification-types/:key',
  summary: 'Get a notification type (the live one; else the most recently deleted, marked deleted)',
  tag,
  auth: 'management',
  params: NotificationTypeParams,
  responses: { 200: NotificationTypeResponse },
  errors: [404],
  handler: async ({ em, auth, params }) =>
    toNotificationTypeResponse(await getNotificationType(em, auth!.tenantId, params.key)),
});

export const remove = defineRoute({
  method: 'DELETE',
  path: '/v1/notification-types/:key',
  summary: 'Delete a notification type (soft: restorable; its templates and preferences are kept)',
  tag,
  auth: 'management',
  params: NotificationTypeParams,
  responses: { 204: null },
  errors: [404],
  handler: async ({ em, auth, params }) => {
    await deleteNotificationType(em, auth!.tenantId, params.key);
  },
});

export const channelDefaults = defineRoute({
  method: 'PATCH',
  path: '/v1/notification-types/:key/channel-defaults',
  summary: 'Change which channels are on by default (only the channels named)',
  tag,
  auth: 'management',
  params: NotificationTypeParams,
  body: UpdateChannelDefaultsRequest,
  responses: { 200: NotificationTypeResponse },
  errors: [404],
  handler: async ({ em, auth, params, body }) =>
    toNotificationTypeResponse(await updateChannelDefaults(em, auth!.tenantId, params.key, body.channel_defaults)),
});

export const optOutPolicy = defineRoute({
  method: 'PATCH',
  path: '/v1/notification-types/:key/opt-out-policy',
  summary: "Turn opting out on or off (off keeps contacts' choices, dormant)",
  tag,
  auth: 'management',
  params: NotificationTypeParams,
  body: SetOptOutPolicyRequest,
  responses: { 200: NotificationTypeResponse },
  errors: [404],
  handler: async ({ em, auth, params, body }) =>
    toNotificationTypeResponse(await setOptOutPolicy(em, auth!.tenantId, params.key, body.opt_out)),
});

export const variables = defineRoute({
  method: 'PUT',
  path: '/v1/notification-types/:key/variables',
  summary: 'Replace the declared variables',
  tag,
  auth: 'management',
  params: NotificationTypeParams,
  body: SetVariablesRequest,
  responses: { 200: NotificationTypeResponse },
  errors: [404],
  handler: async ({ em, auth, params, body }) =>
    toNotificationTypeResponse(await setVariables(em, auth!.tenantId, params.key, body.variables)),
});

export const restore = defineRoute({
  method: 'POST',
  path: '/v1/notification-types/:key/restore',
  summary: 'Restore a deleted notification type (409 when another live type holds the key)',
  tag,
  auth: 'management',
  params: NotificationTypeParams,
  responses: { 200: NotificationTypeResponse },
  errors: [404, 409],
  handler: async ({ em, auth, params }) =>
    toNotificationTypeResponse(await restoreNotificationType(em, auth!.tenantId, params.key)),
});

export const putWorkflow = defineRoute({
  method: 'PUT',
  path: '/v1/notification-types/:key/workflow',
  summary: "Set the type's workflow: channel steps with conditions, delays, digests, throttles (at most 20 steps)",
  tag,
  auth: 'management',
  params: NotificationTypeParams,
  body: Workflow,
  responses: { 200: NotificationTypeResponse },
  errors: [404],
  handler: async ({ em, auth, params, body }) =>
    toNotificationTypeResponse(await setWorkflow(em, auth!.tenantId, params.key, body)),
});

export const deleteWorkflow = defineRoute({
  method: 'DELETE',
  path: '/v1/notification-types/:key/workflow',
  summary: 'Remove the workflow: every enabled channel at once again',
  tag,
  auth: 'management',
  params: NotificationTypeParams,
  responses: { 204: null },
  errors: [404],
  handler: async ({ em, auth, params }) => {
    await setWorkflow(em, auth!.tenantId, params.key, null);
  },
});

export const quietHoursBypass = defineRoute({
  method: 'PATCH',
  path: '/v1/notification-types/:key/quiet-hours',
  summary: "Whether the type's email, push and web push ignore contacts' quiet hours",
  tag,
  auth: 'management',
  params: NotificationTypeParams,
  body: SetQuietHoursBypassRequest,
  responses: { 200: NotificationTypeResponse },
  errors: [404],
  handler: async ({ em, auth, params, body }) =>
    toNotificationTypeResponse(await setQuietHoursBypass(em, auth!.tenantId, params.key, body.bypass_quiet_hours)),
});
