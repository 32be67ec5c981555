// The broadcast jobs: the fan-out (one job per broadcast, its id the broadcast's, started at send_at),
// and the completion check that follows it until every event of the broadcast is final. A worker that
// dies mid fan-out stops heartbeating; its job is retried and resumes from the broadcast's cursor. A
// fan-out out of retries goes to the dead letter queue, whose worker ends the broadcast 'failed'.
import { defineJob } from './types.ts';
import {
  BROADCAST_COMPLETION_QUEUE,
  BROADCAST_FAN_OUT_DEAD_QUEUE,
  BROADCAST_FAN_OUT_QUEUE,
  checkBroadcastCompletion,
  failBroadcast,
} from '../delivery/trigger/broadcasts.ts';
import { fanOutBroadcast } from '../delivery/trigger/fan-out.ts';

export const broadcastFanOutJob = defineJob<{ broadcast_id: string }>({
  name: BROADCAST_FAN_OUT_QUEUE,
  queue: {
    retryLimit: 20,
    retryDelay: 5,
    retryBackoff: true,
    retryDelayMax: 300,
    expireInSeconds: 6 * 3600,
    heartbeatSeconds: 10,
    notify: true,
    deadLetter: BROADCAST_FAN_OUT_DEAD_QUEUE,
  },
  // A fan-out sent for later (send_at) is not announced by NOTIFY: poll for it often enough.
  work: { batchSize: 1, pollingIntervalSeconds: 2, notifyPollingIntervalSeconds: 2 },
  async handler(jobs, runtime) {
    for (const job of jobs) await fanOutBroadcast(runtime, job.data.broadcast_id);
  },
});

export const broadcastFanOutDeadJob = defineJob<{ broadcast_id: string }>({
  name: BROADCAST_FAN_OUT_DEAD_QUEUE,
  queue: { retryLimit: 10, retryDelay: 5, retryBackoff: true, notify: true },
  work: { batchSize: 10, pollingIntervalSeconds: 2 },
  async handler(jobs, runtime) {
    for (const job of jobs) {
      // The reason is the last error of the fan-out job (whose id is the broadcast's).
      const fanOut = await runtime.boss!.getJobById<{ broadcast_id: string }>(
        BROADCAST_FAN_OUT_QUEUE,
        job.data.broadcast_id,
      );
      await failBroadcast(runtime, job.data.broadcast_id, failureReason(fanOut?.output));
    }
  },
});

/** The message of a failed job's output (pg-boss stores the error), or a generic reason. */
function failureReason(output: unknown): string {
  const message =
    typeof output === 'object' && output !== null && 'message' in output
      ? String((output as { message: unknown }).message)
      : '';
  return `the fan-out gave up after its retries${message ? `: ${message}` : ''}`.slice(0, 1000);
}

export const broadcastCompletionJob = defineJob<{ broadcast_id: string; checks: number }>({
  name: BROADCAST_COMPLETION_QUEUE,
  // Every check is sent for later: polled, not announced.
  queue: { retryLimit: 10, retryDelay: 5, retryBackoff: true, expireInSeconds: 600, notify: false },
  work: { batchSize: 10, pollingIntervalSeconds: 1 },
  async handler(jobs, runtime) {
    for (const job of jobs) await checkBroadcastCompletion(runtime, job.data.broadcast_id, job.data.checks);
  },
});
