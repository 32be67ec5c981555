// Every migration, in order. Migrations are ordered data: a new one is appended here, never inserted.
// 0001-baseline is the development migrations squashed before the first release.
import type { MigrationObject } from '@mikro-orm/core';
import { Baseline } from './0001-baseline.ts';
import { DeliveryNextAttempt } from './0002-delivery-next-attempt.ts';
import { Mfa } from './0003-mfa.ts';
import { SsoIdentities } from './0004-sso-identities.ts';
import { TenantCorsOrigins } from './0005-tenant-cors-origins.ts';
import { ProviderAttemptsChatDestinations } from './0006-provider-attempts-chat-destinations.ts';
import { MessageTemplates } from './0007-message-templates.ts';
import { Sms } from './0008-sms.ts';
import { ChatTransports } from './0009-chat-transports.ts';
import { HttpTransports } from './0010-http-transports.ts';
import { EmailFallbackTransport } from './0011-email-fallback-transport.ts';
import { EarlyReceipts } from './0012-early-receipts.ts';
import { Retention } from './0013-retention.ts';

export const migrations: MigrationObject[] = [
  { name: '0001-baseline', class: Baseline },
  { name: '0002-delivery-next-attempt', class: DeliveryNextAttempt },
  { name: '0003-mfa', class: Mfa },
  { name: '0004-sso-identities', class: SsoIdentities },
  { name: '0005-tenant-cors-origins', class: TenantCorsOrigins },
  { name: '0006-provider-attempts-chat-destinations', class: ProviderAttemptsChatDestinations },
  { name: '0007-message-templates', class: MessageTemplates },
  { name: '0008-sms', class: Sms },
  { name: '0009-chat-transports', class: ChatTransports },
  { name: '0010-http-transports', class: HttpTransports },
  { name: '0011-email-fallback-transport', class: EmailFallbackTransport },
  { name: '0012-early-receipts', class: EarlyReceipts },
  { name: '0013-retention', class: Retention },
];
