// Rendering templates into what a channel sends. Inbox items are plain text (title, body, action URL);
// email rendering (subject + brand layout + derived text part) is added alongside as renderEmail().
import { renderString } from './engine.ts';
import type { InboxTemplateRow } from './resolve.ts';

export interface RenderedInbox {
  title: string;
  body: string;
  action_url: string | null;
}

/** Throws UnfilledSlotError naming the first placeholder the context does not fill. */
export async function renderInbox(template: InboxTemplateRow, context: Record<string, unknown>): Promise<RenderedInbox> {
  return {
    title: await renderString(template.title, context, 'text'),
    body: await renderString(template.content, context, 'text'),
    action_url: template.action_url ? await renderString(template.action_url, context, 'text') : null,
  };
}
