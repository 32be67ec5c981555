// Every background job of Herald, in one list. The runtime creates their queues on start and, in
// processes with the worker role, runs their handlers.
import type { JobDefinition } from './types.ts';
import { deliverEventDeadJob, deliverEventJob } from './deliver-event.ts';
import { pruneIdempotencyKeysJob } from './prune-idempotency-keys.ts';
import { streamPrune } from './stream-prune.ts';
import { rateLimitPrune } from './rate-limit-prune.ts';
import { earlyReceiptsSweep } from './early-receipts-sweep.ts';
import { retentionPrune } from './retention-prune.ts';
import { systemEmailJob } from './system-email.ts';
import { dataRequestJob } from './data-request.ts';
import { emailLinkJob } from './email-link.ts';
import { senderDomainsRecheckJob } from './sender-domains-recheck.ts';
import { broadcastCompletionJob, broadcastFanOutDeadJob, broadcastFanOutJob } from './broadcasts.ts';

export const jobs: JobDefinition<any>[] = [
  // delivery of triggered events, its dead letters, and idempotency-key retention (hourly)
  deliverEventJob,
  deliverEventDeadJob,
  pruneIdempotencyKeysJob,
  // the stream log's retention (daily) and idle rate-limit buckets (hourly)
  streamPrune,
  rateLimitPrune,
  // provider receipts that came before their delivery's message id: applied late, or pruned (hourly)
  earlyReceiptsSweep,
  // retention of events, deliveries and inbox items (hourly, in small batches)
  retentionPrune,
  // system emails (verification, reset, invitation) and the lookups behind them
  systemEmailJob,
  emailLinkJob,
  // sender domains' DKIM records, re-checked in DNS (hourly, each domain daily)
  senderDomainsRecheckJob,
  // tenant data exports and deletions
  dataRequestJob,
  // broadcasts: the fan-out to the audience, then the check for completion
  broadcastFanOutJob,
  broadcastFanOutDeadJob,
  broadcastCompletionJob,
];
