// The data-request job: runs a tenant export or deletion filed by POST /v1/auth/tenants/{id}/data-requests.
import { defineJob } from './types.ts';
import { DATA_REQUEST_JOB, runDataRequest } from '../resources/data-requests.ts';

export const dataRequestJob = defineJob<{ data_request_id: string }>({
  name: DATA_REQUEST_JOB,
  queue: {
    retryLimit: 3,
    retryDelay: 30,
    retryBackoff: true,
    expireInSeconds: 3600,
    deleteAfterSeconds: 7 * 24 * 3600,
    notify: true,
  },
  work: { batchSize: 1, pollingIntervalSeconds: 2 },
  async handler(jobs, runtime) {
    // runDataRequest records failures on the request itself, so the job does not retry a failed export.
    for (const job of jobs) await runDataRequest(runtime, job.data.data_request_id);
  },
});
