// Every background job of Herald, in one list. The runtime creates their queues on start and, in
// processes with the worker role, runs their handlers.
import type { JobDefinition } from './types.ts';
import { deliverEventDeadJob, deliverEventJob } from './deliver-event.ts';
import { pruneIdempotencyKeysJob } from './prune-idempotency-keys.ts';

export const jobs: JobDefinition<any>[] = [
  // delivery (trigger)
  deliverEventJob,
  deliverEventDeadJob,
  pruneIdempotencyKeysJob,
];
