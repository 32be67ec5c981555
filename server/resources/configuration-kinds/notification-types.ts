// Notification types in configuration as code: live types only (a deleted type is not configuration),
// with their workflow when they have one (left out of the entry when they have none).
import { DEFAULT_CHANNEL_DEFAULTS } from '../../schemas/notification-types.ts';
import type { Workflow } from '../../schemas/workflows.ts';
import {
  createNotificationType,
  deleteNotificationType,
  listNotificationTypes,
  setOptOutPolicy,
  setQuietHoursBypass,
  setTypeDetails,
  setVariables,
  setWorkflow,
  updateChannelDefaults,
} from '../notification-types.ts';
import type { ConfigurationKind, Entry } from './types.ts';

type TypeEntry = Entry<'notification_types'>;

function entryOf(type: Omit<TypeEntry, 'workflow'> & { workflow?: Workflow | null }): TypeEntry {
  return {
    key: type.key,
    name: type.name || type.key,
    description: type.description,
    channel_defaults: { ...DEFAULT_CHANNEL_DEFAULTS, ...type.channel_defaults },
    opt_out: type.opt_out,
    variables: type.variables.map((v) => ({ name: v.name, required: v.required, description: v.description })),
    bypass_quiet_hours: type.bypass_quiet_hours,
    ...(type.workflow ? { workflow: type.workflow } : {}),
  };
}

export const notificationTypesKind: ConfigurationKind<'notification_types'> = {
  name: 'notification_types',
  id: (entry) => entry.key,
  normalise: (entry) => entryOf(entry),
  async read({ tx, tenantId }) {
    return (await listNotificationTypes(tx, tenantId, false)).map((row) => entryOf(row));
  },
  async create({ tx, tenantId }, entry) {
    await createNotificationType(tx, tenantId, entry);
  },
  async update({ tx, tenantId }, _current, desired, fields) {
    if (fields.includes('name') || fields.includes('description')) {
      await setTypeDetails(tx, tenantId, desired.key, {
        name: desired.name ?? desired.key,
        description: desired.description,
      });
    }
    if (fields.includes('channel_defaults'))
      await updateChannelDefaults(tx, tenantId, desired.key, desired.channel_defaults);
    if (fields.includes('opt_out')) await setOptOutPolicy(tx, tenantId, desired.key, desired.opt_out);
    if (fields.includes('variables')) await setVariables(tx, tenantId, desired.key, desired.variables);
    if (fields.includes('workflow')) await setWorkflow(tx, tenantId, desired.key, desired.workflow ?? null);
    if (fields.includes('bypass_quiet_hours'))
      await setQuietHoursBypass(tx, tenantId, desired.key, desired.bypass_quiet_hours);
  },
  async remove({ tx, tenantId }, current) {
    await deleteNotificationType(tx, tenantId, current.key);
  },
};
