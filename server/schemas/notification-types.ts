// Notification types: key, per-channel defaults, opt-out policy, declared variables, soft delete.
import { z } from 'zod';
import { CHANNELS, isoDateTime, queryBoolean, resourceKey, type Channel } from './common.ts';
import { Workflow } from './workflows.ts';

/**
 * Names the render context reserves (brand values under `brand`, the recipient under `contact`, and
 * the email links Herald fills in).
 */
export const RESERVED_VARIABLE_NAMES = ['brand', 'contact', 'unsubscribe_url', 'preferences_url'] as const;

/**
 * A template variable name: usable as a top-level Liquid variable ({{ order_id }}). A leading double
 * underscore is refused, so no name can ever be __proto__ or a similar special property.
 */
export const VARIABLE_NAME = /^(?!__)[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const VARIABLE_NAME_MESSAGE = 'must be a letter or _ then letters, digits or _ (at most 64, not starting with __)';
export const variableName = z
  .string()
  .regex(VARIABLE_NAME, VARIABLE_NAME_MESSAGE)
  .refine((v) => !(RESERVED_VARIABLE_NAMES as readonly string[]).includes(v), {
    message: `${RESERVED_VARIABLE_NAMES.join(', ')} are reserved names`,
  });

export const DEFAULT_CHANNEL_DEFAULTS: Record<Channel, boolean> = {
  inbox: true,
  email: true,
  push: false,
  web_push: false,
  sms: false,
  chat: false,
  http: false,
};

const ChannelDefaults = z.object(
  Object.fromEntries(CHANNELS.map((channel) => [channel, z.boolean()])) as Record<Channel, z.ZodBoolean>,
);
export type ChannelDefaults = z.infer<typeof ChannelDefaults>;
const ChannelDefaultsPatch = ChannelDefaults.partial().strict();

const VariableInput = z.object({
  name: variableName,
  required: z.boolean().default(false),
  description: z.string().max(500).default(''),
});
const VariableOutput = z.object({ name: z.string(), required: z.boolean(), description: z.string() });
export type NotificationTypeVariable = z.infer<typeof VariableOutput>;

const variableList = z
  .array(VariableInput)
  .max(100)
  .superRefine((list, ctx) => {
    const seen = new Set<string>();
    list.forEach((v, i) => {
      if (seen.has(v.name))
        ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `variable ${v.name} is declared twice` });
      seen.add(v.name);
    });
  });

export const CreateNotificationTypeRequest = z
  .object({
    key: resourceKey,
    name: z.string().trim().max(200).optional().describe('Defaults to the key'),
    description: z.string().max(2000).default(''),
    channel_defaults: ChannelDefaultsPatch.default({}).describe(
      'Channels on by default; unnamed channels: inbox and email on, the others off',
    ),
    opt_out: z.boolean().default(true).describe('Whether contacts may opt out of this type (the opt-out policy)'),
    variables: variableList.default([]),
    workflow: Workflow.optional().describe('The steps every event runs through (PUT .../workflow sets it later)'),
    bypass_quiet_hours: z
      .boolean()
      .default(false)
      .describe("Remote channels ignore contacts' quiet hours (one-time codes, security alerts)"),
  })
  .meta({ id: 'CreateNotificationTypeRequest' });
export type CreateNotificationTypeRequest = z.infer<typeof CreateNotificationTypeRequest>;

export const UpdateChannelDefaultsRequest = z
  .object({ channel_defaults: ChannelDefaultsPatch.describe('Only the channels named change') })
  .meta({ id: 'UpdateChannelDefaultsRequest' });

export const SetOptOutPolicyRequest = z.object({ opt_out: z.boolean() }).meta({ id: 'SetOptOutPolicyRequest' });

export const SetVariablesRequest = z.object({ variables: variableList }).meta({ id: 'SetVariablesRequest' });

export const NotificationTypeResponse = z
  .object({
    key: z.string(),
    name: z.string(),
    description: z.string(),
    channel_defaults: ChannelDefaults,
    opt_out: z.boolean(),
    variables: z.array(VariableOutput),
    workflow: Workflow.nullable().describe(
      'The steps every event of the type runs through; null: every enabled channel at once',
    ),
    bypass_quiet_hours: z.boolean().describe("Remote channels ignore contacts' quiet hours"),
    deleted: z.boolean(),
    created_at: isoDateTime,
    updated_at: isoDateTime,
  })
  .meta({ id: 'NotificationTypeResponse' });
export type NotificationTypeResponse = z.infer<typeof NotificationTypeResponse>;

export const NotificationTypeParams = z.object({ key: resourceKey });
export const NotificationTypeListQuery = z.object({
  include_deleted: queryBoolean.default(false).describe('Also list deleted (restorable) types'),
});

export const SetQuietHoursBypassRequest = z
  .object({ bypass_quiet_hours: z.boolean() })
  .meta({ id: 'SetQuietHoursBypassRequest' });
