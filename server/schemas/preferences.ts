// The preference matrix of a contact: every live notification type x channel.
import { z } from 'zod';
import { Channel, resourceKey } from './common.ts';

export const PreferenceEntry = z
  .object({
    type: z.string(),
    channel: Channel,
    /** What applies now: the contact's choice while the type's opt-out policy is on, else the type's default. */
    enabled: z.boolean(),
    source: z.enum(['default', 'contact']),
    /** The type's opt-out policy: false means the type is mandatory and a stored choice is kept but dormant. */
    opt_out: z.boolean(),
  })
  .meta({ id: 'PreferenceEntry' });
export type PreferenceEntry = z.infer<typeof PreferenceEntry>;

export const PreferencesResponse = z
  .object({ preferences: z.array(PreferenceEntry) })
  .meta({ id: 'PreferencesResponse' });

export const SetPreferenceRequest = z
  .object({ type: resourceKey, channel: Channel, enabled: z.boolean() })
  .meta({ id: 'SetPreferenceRequest' });
export type SetPreferenceRequest = z.infer<typeof SetPreferenceRequest>;
