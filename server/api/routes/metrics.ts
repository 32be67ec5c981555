// Prometheus metrics on the API port, for a scraper holding the configured metrics token (metricsToken);
// the separate listener (metricsListen, http/metrics-server.ts) serves the same text without one.
import { z } from 'zod';
import { defineRoute } from '../route.ts';
import { checkMetricsAccess, scrapeMetrics } from '../../resources/metrics.ts';

export const scrape = defineRoute({
  method: 'GET',
  path: '/metrics',
  summary: 'Prometheus metrics (Authorization: Bearer <metricsToken>; 404 when no token is configured)',
  tag: 'system',
  auth: 'public',
  produces: 'text/plain',
  headers: [
    {
      name: 'Authorization',
      description: "Bearer <metricsToken> (the install's metrics token, not a service key)",
      required: true,
    },
  ],
  responses: { 200: z.string().meta({ description: 'Prometheus text exposition format 0.0.4' }) },
  errors: [401, 404],
  handler: async ({ runtime, event }) => {
    checkMetricsAccess(runtime, event.req.headers.get('authorization'));
    const { body, contentType } = await scrapeMetrics(runtime);
    return new Response(body, { status: 200, headers: { 'content-type': contentType } });
  },
});
