// The settings that let tenants and browsers point Herald at private addresses, and how a refusal
// names them: an operator who meets one in development learns what to set, and that the setting is
// read at start.
import { environmentVariableOf } from '../config.ts';

export type AllowPrivateSetting = 'allowPrivatePushEndpoints' | 'allowPrivateSmtpHosts' | 'allowPrivateWebhookUrls';

/** The tail of a refusal: `(allowPrivateSmtpHosts, HERALD_ALLOW_PRIVATE_SMTP_HOSTS=true, allows private ones; ...)`. */
export function allowsPrivate(setting: AllowPrivateSetting): string {
  return `(${setting}, ${environmentVariableOf(setting)}=true, allows private ones; it applies at restart)`;
}
