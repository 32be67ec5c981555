// What only email templates have: the rendered preview, and the report of templates that refer to
// variables their notification type no longer declares.
import type { EntityManager } from '@mikro-orm/postgresql';
import { invalidField } from '../base/errors.ts';
import { query } from '../base/db/sql.ts';
import { TemplateError, UnfilledSlotError, referencedVariables } from '../base/template-engine.ts';
import { findBrand, renderContext, resolveTemplate } from '../channels/resolve.ts';
import { renderEmail, type RenderedEmail } from '../channels/render.ts';
import { RESERVED_VARIABLE_NAMES } from '../schemas/notification-types.ts';
import type { RenderRequest } from '../schemas/templates.ts';
import { findType } from './notification-types.ts';

const TEMPLATES_OF_TYPE = `SELECT t.id, t.brand_key, t.language, t.subject, t.content, b."values" AS brand_values
       FROM email_templates t JOIN brands b ON b.tenant_id = t.tenant_id AND b.key = t.brand_key
      WHERE t.tenant_id = $1 AND t.notification_type_key = $2
      ORDER BY t.brand_key, t.language`;

/**
 * Renders what would be sent: the named brand's own template for the type and language, else the
 * default brand's (the same fallback chain as sending), rendered with the named brand's values and the
 * request's variables over them. 422 for a missing brand, no template, or an unfilled slot.
 */
export async function previewEmail(
  em: EntityManager,
  tenantId: string,
  request: RenderRequest,
): Promise<RenderedEmail> {
  const brand = await findBrand(em, tenantId, request.brand_key);
  if (!brand) throw invalidField(['body', 'brand_key'], `no branding ${request.brand_key}`, 'not_found');
  const resolved = await resolveTemplate(em, 'email', {
    tenantId,
    typeKey: request.notification_type_key,
    brand,
    language: request.language ?? null,
  });
  if (!resolved) {
    throw invalidField(
      ['body', 'notification_type_key'],
      `no email template resolves for type ${request.notification_type_key} with brand ${brand.key} (or the default brand) in ${request.language ?? 'the default language'} or the tenant's default language`,
      'no_template',
    );
  }
  try {
    // The links Herald fills in at send time are shown as placeholders in a preview.
    const variables = { unsubscribe_url: '#unsubscribe', preferences_url: '#preferences', ...request.variables };
    return await renderEmail(
      resolved.template,
      resolved.brand,
      renderContext(resolved.brand, variables, request.contact ?? {}),
    );
  } catch (error) {
    if (error instanceof UnfilledSlotError) {
      // A contact field is named where the sample contact gives it: loc ["body", "contact", "name"].
      const loc = error.slot.startsWith('contact.')
        ? ['body', ...error.slot.split('.')]
        : ['body', 'variables', error.slot];
      throw invalidField(loc, error.message, 'missing');
    }
    if (error instanceof TemplateError)
      throw invalidField(['body', 'variables'], `the template cannot be rendered: ${error.message}`, 'template_error');
    throw error;
  }
}

export interface AffectedTemplate {
  template_id: string;
  brand_key: string;
  language: string;
  missing_variables: string[];
}

/**
 * Email templates of a type whose placeholders name variables the type does not declare (after a
 * SetVariables, say). Brand values fill placeholders too, so a name among the template's brand values
 * is not missing, nor are `brand` and `contact`, which the render context always provides.
 */
export async function templatesAffectedBy(
  em: EntityManager,
  tenantId: string,
  typeKey: string,
): Promise<AffectedTemplate[]> {
  const type = await findType(em, tenantId, typeKey);
  if (!type) throw invalidField(['path', 'notification_type_key'], `no notification type ${typeKey}`, 'not_found');
  const declared = new Set<string>([...type.variables.map((v) => v.name), ...RESERVED_VARIABLE_NAMES]);
  const rows = await query<{
    id: string;
    brand_key: string;
    language: string;
    subject: string;
    content: string;
    brand_values: Record<string, unknown>;
  }>(em, TEMPLATES_OF_TYPE, [tenantId, typeKey]);
  const affected: AffectedTemplate[] = [];
  for (const row of rows) {
    const referenced = new Set([...referencedVariables(row.subject), ...referencedVariables(row.content)]);
    const missing = [...referenced]
      .filter((name) => !declared.has(name) && !Object.hasOwn(row.brand_values, name))
      .sort();
    if (missing.length > 0)
      affected.push({
        template_id: row.id,
        brand_key: row.brand_key,
        language: row.language,
        missing_variables: missing,
      });
  }
  return affected;
}
