// The API in the CLI's own process: the CLI's local mode sends its requests to the same routes the
// HTTP server serves (auth, validation, audit and all), over a local runtime, as the host operator
// acting for one tenant. The host-operator token is made here, per process, and never leaves it.
import { createApp } from '../api/app.ts';
import { routes } from '../api/routes/index.ts';
import { issueHostToken, revokeHostToken } from '../base/auth/credentials.ts';
import { cliActor } from '../resources/audit-log.ts';
import type { Runtime } from './runtime.ts';

export interface InProcessApi {
  /** Answers a request as the HTTP server would; its Authorization header is set here. */
  fetch(request: Request): Promise<Response>;
  /** Ends the credential: later requests answer 401. */
  close(): void;
}

/** Where in-process requests claim to go; nothing listens there. */
export const IN_PROCESS_ORIGIN = 'http://herald.in-process';

export function openInProcessApi(runtime: Runtime, tenantId: string): InProcessApi {
  const app = createApp(runtime, routes);
  const token = issueHostToken(tenantId, cliActor().id);
  return {
    fetch: async (request) => {
      request.headers.set('authorization', `Bearer ${token}`);
      return app.fetch(request);
    },
    close: () => revokeHostToken(token),
  };
}
