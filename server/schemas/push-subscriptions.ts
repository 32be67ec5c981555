// Push destinations of a contact: a device token (APNs, FCM, Expo) or a browser subscription (web push).
import { z } from 'zod';
import { PushProvider, isoDateTime } from './common.ts';
import { uuidParam } from './contacts.ts';

const base64url = (bytes: number, what: string) =>
  z
    .string()
    .regex(/^[A-Za-z0-9_-]+={0,2}$/, `${what} must be base64url`)
    .refine((v) => Buffer.from(v, 'base64url').length === bytes, `${what} must encode ${bytes} bytes`);

/** https, or http on a loopback host (local development and test push services). */
const pushEndpoint = z
  .string()
  .max(2048)
  .refine((value) => {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      return false;
    }
    if (url.protocol === 'https:') return true;
    return url.protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
  }, 'must be an https URL');

export const WebPushSubscription = z
  .object({
    endpoint: pushEndpoint,
    keys: z.object({ p256dh: base64url(65, 'p256dh'), auth: base64url(16, 'auth') }),
  })
  .meta({ id: 'WebPushSubscription' });

export const CreatePushSubscriptionRequest = z
  .discriminatedUnion('provider', [
    z.object({ provider: PushProvider.exclude(['webpush']), token: z.string().trim().min(1).max(4096) }),
    z.object({ provider: z.literal('webpush'), subscription: WebPushSubscription }),
  ])
  .meta({ id: 'CreatePushSubscriptionRequest' });
export type CreatePushSubscriptionRequest = z.infer<typeof CreatePushSubscriptionRequest>;

export const PushSubscriptionResponse = z
  .object({
    id: z.string(),
    provider: PushProvider,
    /** The device token (apns, fcm, expo); null for web push. */
    token: z.string().nullable(),
    /** The browser endpoint (web push); null for device tokens. The subscription keys are never returned. */
    endpoint: z.string().nullable(),
    created_at: isoDateTime,
    last_used_at: isoDateTime.nullable().describe('When a push was last sent to it; recorded at most once a minute'),
  })
  .meta({ id: 'PushSubscriptionResponse' });
export type PushSubscriptionResponse = z.infer<typeof PushSubscriptionResponse>;

export const PushSubscriptionParams = z.object({ id: uuidParam, subscription_id: uuidParam });
