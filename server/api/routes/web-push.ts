// The tenant's VAPID public key, for the browser's applicationServerKey. Open to any credential of
// the tenant, including contact tokens: the key is public by design.
import { defineRoute } from '../route.ts';
import { WebPushPublicKeyResponse } from '../../schemas/transports.ts';
import { webPushPublicKey } from '../../channels/push/push-transports.ts';

export const webPushPublicKeyRoute = defineRoute({
  method: 'GET',
  path: '/v1/web-push/public-key',
  summary: "The tenant's VAPID public key (404 when the tenant has no web push transport)",
  tag: 'transports',
  auth: 'any',
  responses: { 200: WebPushPublicKeyResponse },
  errors: [404],
  handler: async ({ em, auth }) => ({ public_key: await webPushPublicKey(em, auth!.tenantId) }),
});
