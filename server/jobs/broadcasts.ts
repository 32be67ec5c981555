// The broadcast jobs: the fan-out (one job per broadcast, its id the broadcast's, started at send_at),
// and the completion check that follows it until every event of the broadcast is final. A worker that
// dies mid fan-out stops heartbeating; its job is retried and resumes from the broadcast's cursor.
import { defineJob } from './types.ts';
import { BROADCAST_COMPLETION_QUEUE, BROADCAST_FAN_OUT_QUEUE, checkBroadcastCompletion } from '../services/broadcasts.ts';
import { fanOutBroadcast } from '../services/broadcast-fan-out.ts';

export const broadcastFanOutJob = defineJob<{ broadcast_id: string }>({
  name: BROADCAST_FAN_OUT_QUEUE,
  queue: { retryLimit: 20, retryDelay: 5, retryBackoff: true, retryDelayMax: 300, expireInSeconds: 6 * 3600, heartbeatSeconds: 10, notify: true },
  // A fan-out sent for later (send_at) is not announced by NOTIFY: poll for it often enough.
  work: { batchSize: 1, pollingIntervalSeconds: 2, notifyPollingIntervalSeconds: 2 },
  async handler(jobs, runtime) {
    for (const job of jobs) await fanOutBroadcast(runtime, job.data.broadcast_id);
  },
});

export const broadcastCompletionJob = defineJob<{ broadcast_id: string; checks: number }>({
  name: BROADCAST_COMPLETION_QUEUE,
  // Every check is sent for later: polled, not announced.
  queue: { retryLimit: 10, retryDelay: 5, retryBackoff: true, expireInSeconds: 600, notify: false },
  work: { batchSize: 10, pollingIntervalSeconds: 1 },
  async handler(jobs, runtime) {
    for (const job of jobs) await checkBroadcastCompletion(runtime, job.data.broadcast_id, job.data.checks);
  },
});
