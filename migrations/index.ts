// Every migration, in order. Migrations are ordered data: a new one is appended here, never inserted.
import type { MigrationObject } from '@mikro-orm/core';
import { Foundation } from './0001-foundation.ts';
import { Configuration } from './0002-configuration.ts';
import { Transports } from './0003-transports.ts';
import { Delivery } from './0004-delivery.ts';
import { Identity } from './0005-identity.ts';
import { ApiKeyNotices } from './0006-api-key-notices.ts';
import { DeliveryWritePath } from './0007-delivery-write-path.ts';
import { EventStatusUpdates } from './0008-event-status-updates.ts';
import { EventStatusRoom } from './0009-event-status-room.ts';
import { StreamEventsKey } from './0010-stream-events-key.ts';
import { StatementAssertions } from './0011-statement-assertions.ts';
import { InboxStreamIds } from './0012-inbox-stream-ids.ts';
import { Orchestration } from './0013-orchestration.ts';
import { Deliverability } from './0014-deliverability.ts';
import { Console } from './0016-console.ts';
import { Audiences } from './0015-audiences.ts';
import { BroadcastFailures } from './0017-broadcast-failures.ts';
import { PushSubscriptionFillfactor } from './0018-push-subscription-fillfactor.ts';
import { DeliveryEventReferences } from './0019-delivery-event-references.ts';
import { EventContactReference } from './0020-event-contact-reference.ts';
import { EventTenantReference } from './0021-event-tenant-reference.ts';

export const migrations: MigrationObject[] = [
  { name: '0001-foundation', class: Foundation },
  { name: '0002-configuration', class: Configuration },
  { name: '0003-transports', class: Transports },
  { name: '0004-delivery', class: Delivery },
  { name: '0005-identity', class: Identity },
  { name: '0006-api-key-notices', class: ApiKeyNotices },
  { name: '0007-delivery-write-path', class: DeliveryWritePath },
  { name: '0008-event-status-updates', class: EventStatusUpdates },
  { name: '0009-event-status-room', class: EventStatusRoom },
  { name: '0010-stream-events-key', class: StreamEventsKey },
  { name: '0011-statement-assertions', class: StatementAssertions },
  { name: '0012-inbox-stream-ids', class: InboxStreamIds },
  { name: '0013-orchestration', class: Orchestration },
  { name: '0014-deliverability', class: Deliverability },
  { name: '0016-console', class: Console },
  { name: '0015-audiences', class: Audiences },
  { name: '0017-broadcast-failures', class: BroadcastFailures },
  { name: '0018-push-subscription-fillfactor', class: PushSubscriptionFillfactor },
  { name: '0019-delivery-event-references', class: DeliveryEventReferences },
  { name: '0020-event-contact-reference', class: EventContactReference },
  { name: '0021-event-tenant-reference', class: EventTenantReference },
];
