// Workflows of a notification type: the steps an event runs through (channel sends with conditions,
// delays, digests, throttles), and each step's progress as the event status shows it.
import { z } from 'zod';
import { conditionSyntaxError, templateSyntaxError } from '../base/template-engine.ts';
import { Channel } from './common.ts';

export const MAX_WORKFLOW_STEPS = 20;
/** The longest a delay, digest window or throttle window may be: 30 days. */
export const MAX_WAIT_SECONDS = 30 * 24 * 3600;

/** A single `{{ variable }}` placeholder (a path into the variables, as templates write it). */
const placeholder = z
  .string()
  .max(200)
  .regex(
    /^\{\{\s*[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\s*\}\}$/,
    'must be a single placeholder such as "{{ project_id }}"',
  )
  .refine((v) => templateSyntaxError(v) === null, { message: 'is not a valid placeholder' });

const seconds = z.number().int().min(1).max(MAX_WAIT_SECONDS);

const Condition = z
  .string()
  .min(1)
  .max(1000)
  .superRefine((expression, ctx) => {
    const error = conditionSyntaxError(expression);
    if (error) ctx.addIssue({ code: 'custom', message: `not a valid Liquid condition: ${error}` });
  })
  .describe(
    'A Liquid expression over vars, contact, brand and inbox ({read, seen, archived}), e.g. "inbox.read == false"',
  );

export const ChannelStep = z
  .object({ kind: z.literal('channel'), channel: Channel, if: Condition.optional() })
  .strict();
export const DelayStep = z
  .object({
    kind: z.literal('delay'),
    seconds: seconds.optional(),
    until: placeholder.optional().describe('A variable holding an RFC 3339 time'),
  })
  .strict()
  .refine((s) => (s.seconds === undefined) !== (s.until === undefined), {
    message: 'give exactly one of seconds and until',
  });
export const DigestStep = z
  .object({
    kind: z.literal('digest'),
    window_seconds: seconds,
    key: placeholder.optional(),
    max_events: z.number().int().min(1).max(1000).default(100),
  })
  .strict();
export const ThrottleStep = z
  .object({
    kind: z.literal('throttle'),
    limit: z.number().int().min(1).max(100_000),
    window_seconds: seconds,
    key: placeholder.optional(),
  })
  .strict();

export const WorkflowStep = z
  .discriminatedUnion('kind', [ChannelStep, DelayStep, DigestStep, ThrottleStep])
  .meta({ id: 'WorkflowStep' });
export type WorkflowStep = z.infer<typeof WorkflowStep>;

export const Workflow = z
  .object({ steps: z.array(WorkflowStep).min(1).max(MAX_WORKFLOW_STEPS) })
  .superRefine((workflow, ctx) => {
    const seen = new Map<string, number>();
    workflow.steps.forEach((step, index) => {
      if (step.kind !== 'channel') return;
      if (seen.has(step.channel)) {
        ctx.addIssue({
          code: 'custom',
          path: ['steps', index, 'channel'],
          message: `channel ${step.channel} is already sent by step ${seen.get(step.channel)}`,
        });
      }
      seen.set(step.channel, index);
    });
    if (seen.size === 0)
      ctx.addIssue({ code: 'custom', path: ['steps'], message: 'a workflow needs at least one channel step' });
  })
  .meta({ id: 'Workflow' });
export type Workflow = z.infer<typeof Workflow>;

export const StepStatus = z
  .enum(['pending', 'waiting', 'done', 'skipped', 'failed', 'canceled'])
  .meta({ id: 'StepStatus' });
export type StepStatus = z.infer<typeof StepStatus>;

export const StepView = z
  .object({
    index: z.number().int(),
    kind: z.enum(['channel', 'delay', 'digest', 'throttle']),
    status: StepStatus,
    run_at: z.string().nullable().describe('When a waiting step runs, or when the step ran'),
    reason: z.string().nullable(),
  })
  .meta({ id: 'EventStep' });
export type StepView = z.infer<typeof StepView>;

/** A step's progress as stored on the event: the view plus the step's definition, snapshotted at the first run. */
export interface StepState extends StepView {
  definition: WorkflowStep;
}
