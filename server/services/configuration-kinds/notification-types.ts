// Notification types in configuration as code: live types only (a deleted type is not configuration).
import { DEFAULT_CHANNEL_DEFAULTS } from '../../schemas/notification-types.ts';
import {
  createNotificationType,
  deleteNotificationType,
  listNotificationTypes,
  setOptOutPolicy,
  setTypeDetails,
  setVariables,
  updateChannelDefaults,
} from '../notification-types.ts';
import type { ConfigurationKind } from './types.ts';

export const notificationTypesKind: ConfigurationKind<'notification_types'> = {
  name: 'notification_types',
  id: (entry) => entry.key,
  normalise: (entry) => ({
    key: entry.key,
    name: entry.name || entry.key,
    description: entry.description,
    channel_defaults: { ...DEFAULT_CHANNEL_DEFAULTS, ...entry.channel_defaults },
    opt_out: entry.opt_out,
    variables: entry.variables.map((v) => ({ name: v.name, required: v.required, description: v.description })),
  }),
  async read({ tx, tenantId }) {
    const rows = await listNotificationTypes(tx, tenantId, false);
    return rows.map((row) => ({
      key: row.key,
      name: row.name,
      description: row.description,
      channel_defaults: { ...DEFAULT_CHANNEL_DEFAULTS, ...row.channel_defaults },
      opt_out: row.opt_out,
      variables: row.variables.map((v) => ({ name: v.name, required: v.required, description: v.description })),
    }));
  },
  async create({ tx, tenantId }, entry) {
    await createNotificationType(tx, tenantId, entry);
  },
  async update({ tx, tenantId }, _current, desired, fields) {
    if (fields.includes('name') || fields.includes('description')) {
      await setTypeDetails(tx, tenantId, desired.key, { name: desired.name ?? desired.key, description: desired.description });
    }
    if (fields.includes('channel_defaults')) await updateChannelDefaults(tx, tenantId, desired.key, desired.channel_defaults);
    if (fields.includes('opt_out')) await setOptOutPolicy(tx, tenantId, desired.key, desired.opt_out);
    if (fields.includes('variables')) await setVariables(tx, tenantId, desired.key, desired.variables);
  },
  async remove({ tx, tenantId }, current) {
    await deleteNotificationType(tx, tenantId, current.key);
  },
};
