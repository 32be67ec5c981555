// The first notification of a new install: a `welcome` type (inbox and email on, one required variable,
// `name`) with an inbox and an email template in the tenant's default brand and language, so the quick
// start and the demo page have something to send. Seeded once by `herald init` in single mode; a
// tenant that already has a live `welcome` type keeps it.
import type { EntityManager } from '@mikro-orm/postgresql';
import { createNotificationType, findLiveType } from './notification-types.ts';
import { createTemplate } from './templates.ts';

export const WELCOME_TYPE_KEY = 'welcome';

/** Seeds the welcome type and its templates; false when the tenant has a live `welcome` type already. */
export async function seedWelcomeNotification(em: EntityManager, tenantId: string): Promise<boolean> {
  return em.transactional(async (tx) => {
    if (await findLiveType(tx, tenantId, WELCOME_TYPE_KEY)) return false;
    await createNotificationType(tx, tenantId, {
      key: WELCOME_TYPE_KEY,
      name: 'Welcome',
      description: 'The first notification: try it with herald send --type welcome --to <external_id> --var name=Ann',
      channel_defaults: { inbox: true, email: true, push: false, web_push: false },
      opt_out: true,
      variables: [{ name: 'name', required: true, description: 'Who is welcomed' }],
      bypass_quiet_hours: false,
    });
    await createTemplate(tx, tenantId, 'inbox', {
      notification_type_key: WELCOME_TYPE_KEY,
      title: 'Welcome, {{ name }}!',
      content: 'This is your first notification from {{ brand.name }}, delivered by Herald.',
      action_url: null,
    });
    await createTemplate(tx, tenantId, 'email', {
      notification_type_key: WELCOME_TYPE_KEY,
      subject: 'Welcome to {{ brand.name }}, {{ name }}',
      content: '<p>Hi {{ name }},</p><p>This is your first email from {{ brand.name }}, sent by Herald.</p>',
    });
    return true;
  });
}
