// The encryption contexts (additional authenticated data) of every secret Herald stores: one function
// per kind of secret, naming the row it belongs to. A ciphertext decrypts only under the context it
// was sealed with, so a secret copied to another row (or another column) is unreadable there. The
// modules that encrypt and decrypt, and the list of encrypted columns that key rotation walks
// (encrypted-columns.ts), all take the context from here.

/** An install-wide secret (the token signing key, the default SMTP), by its name. */
export const installSecretAad = (name: string) => `install_secrets/${name}`;

/** A sender domain's DKIM private key. */
export const dkimKeyAad = (senderDomainId: string) => `sender_domains/${senderDomainId}/dkim_private_key`;

/** The password of a tenant's SMTP transport in one slot (the primary's context names no slot). */
export const emailTransportPasswordAad = (tenantId: string, slot: 'primary' | 'fallback' = 'primary') =>
  slot === 'primary' ? `email_transports/${tenantId}/password` : `email_transports/${tenantId}/${slot}/password`;

/** The secret fields of a tenant's push transport for one provider. */
export const pushTransportSecretsAad = (tenantId: string, provider: string) =>
  `push_transports/${tenantId}/${provider}/secrets`;

/** The secret fields of a tenant's SMS transport for one provider (and its callback token). */
export const smsTransportSecretsAad = (tenantId: string, provider: string) =>
  `sms_transports/${tenantId}/${provider}/secrets`;

/** An event's secret variables, until it is final. */
export const secretVariablesAad = (eventId: string) => `events/${eventId}/secret_variables`;

/** A system email's sealed link token, while its job waits in the queue: the seal's own random id. */
export const systemEmailAad = (sealId: string) => `system_email/${sealId}`;

/** The signing secret of a tenant's webhook endpoint. */
export const webhookSecretAad = (endpointId: string) => `webhook_endpoints/${endpointId}/secret`;

/** The OIDC client secret of a tenant's single sign-on provider. */
export const ssoClientSecretAad = (providerId: string) => `sso_providers/${providerId}/client_secret`;

/** A broadcast's secret variables, until the fan-out has copied them into its events. */
export const broadcastSecretAad = (broadcastId: string) => `broadcasts/${broadcastId}/secret_variables`;

/** A console user's TOTP secret, bound to its factor row. */
export const mfaSecretAad = (factorId: string) => `mfa_factors/${factorId}/secret`;

/** The webhook URL of a contact's chat destination (a credential: whoever has it can post). */
export const chatWebhookUrlAad = (tenantId: string, destinationId: string) =>
  `chat_destinations/${tenantId}/${destinationId}/webhook_url`;

/** The bot token of a tenant's chat transport for one provider (slack, telegram). */
export const chatTransportSecretsAad = (tenantId: string, provider: string) =>
  `chat_transports/${tenantId}/${provider}/secrets`;

/** The secret headers of a tenant's http channel transport. */
export const httpTransportHeadersAad = (tenantId: string) => `http_transports/${tenantId}/headers`;

/** The signing secret of a tenant's http channel transport. */
export const httpTransportSecretAad = (tenantId: string) => `http_transports/${tenantId}/secret`;
