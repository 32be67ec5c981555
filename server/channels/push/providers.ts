// Sending one push notification for a tenant: loads the provider's transport, then hands over to the
// provider's adapter. Outcomes tell the caller what to do next: 'dead' means the destination is gone
// (delete the subscription, do not retry); 'failed' says whether a retry can help; 'skipped' means
// there is nothing usable to send with.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Context } from '../../base/context.ts';
import { sendApns } from './apns.ts';
import { sendExpo } from './expo.ts';
import { sendFcm } from './fcm.ts';
import { loadPushTransport, type LoadedPushTransport, type ProviderCredentials } from './tenant-credentials.ts';
import { sendWebPush } from '../web-push/provider.ts';
import type { PushDestination, PushMessage, PushOutcome } from './messages.ts';

export type { ProviderCredentials };

export async function sendPushWith(
  runtime: Context,
  credentials: ProviderCredentials,
  destination: PushDestination,
  message: PushMessage,
): Promise<PushOutcome> {
  try {
    if (destination.provider === 'webpush') {
      if (credentials.provider !== 'webpush') return { status: 'skipped', reason: 'no_transport' };
      return await sendWebPush(runtime, credentials, destination.subscription, message);
    }
    switch (credentials.provider) {
      case 'apns':
        return await sendApns(runtime, credentials, destination.token, message);
      case 'fcm':
        return await sendFcm(runtime, credentials, destination.token, message);
      case 'expo':
        return await sendExpo(runtime, credentials, destination.token, message);
      default:
        return { status: 'skipped', reason: 'no_transport' };
    }
  } catch (error) {
    // An adapter bug or an unexpected answer must not take the job down unrecorded.
    runtime.logger.warn('push send failed unexpectedly', { provider: destination.provider, error });
    return { status: 'failed', error: `${destination.provider}: ${(error as Error).message}`, retryable: true };
  }
}

/** `loadTransport`: how to find the tenant's transport for the provider (a run's shared lookup); read from the database by default. */
export async function sendPush(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  destination: PushDestination,
  message: PushMessage,
  loadTransport: (provider: PushDestination['provider']) => Promise<LoadedPushTransport | null> = (provider) =>
    loadPushTransport(runtime, em, tenantId, provider),
): Promise<PushOutcome> {
  const loaded = await loadTransport(destination.provider);
  if (!loaded) return { status: 'skipped', reason: 'no_transport' };
  if (loaded.state === 'unreadable') return { status: 'skipped', reason: 'credentials_unreadable' };
  return sendPushWith(runtime, loaded.credentials, destination, message);
}
