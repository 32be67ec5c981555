// What a push provider's adapter is given and answers: the destination, the message and the outcome.
export interface WebPushSubscription {
  endpoint: string;
  keys: { p256dh: string; auth: string };
}

export type PushDestination =
  { provider: 'apns' | 'fcm' | 'expo'; token: string } | { provider: 'webpush'; subscription: WebPushSubscription };

export type PushMessage = { title: string; body: string; data?: Record<string, unknown>; action_url?: string | null };

export type PushOutcome =
  | { status: 'sent'; providerMessageId?: string }
  | { status: 'dead'; error: string }
  | { status: 'failed'; error: string; retryable: boolean }
  | { status: 'skipped'; reason: 'no_transport' | 'credentials_unreadable' };
