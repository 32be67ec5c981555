// Every background job of Herald, in one list. The runtime creates their queues on start and, in
// processes with the worker role, runs their handlers.
import type { JobDefinition } from './types.ts';
import { streamPrune } from './stream-prune.ts';

export const jobs: JobDefinition<any>[] = [
  // the stream log's retention (daily)
  streamPrune,
];
