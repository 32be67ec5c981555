// Template lookup for a delivery: the event's brand (or the default brand when none was named or the
// named one has been deleted since), the contact's language, and the fallback chain of resolve.ts.
import type { EntityManager } from '@mikro-orm/postgresql';
import { findBrand, renderContext, resolveTemplate, type BrandRow, type TemplateKind } from '../templates/resolve.ts';
import type { ContactRow } from '../services/contact-upsert.ts';
import type { EventForDelivery } from './channels/types.ts';

export async function deliveryTemplate<K extends TemplateKind>(em: EntityManager, kind: K, event: EventForDelivery, contact: ContactRow) {
  const brand: BrandRow | undefined =
    (event.brand_key ? await findBrand(em, event.tenant_id, event.brand_key) : undefined) ?? (await findBrand(em, event.tenant_id, null));
  if (!brand) return null;
  return resolveTemplate(em, kind, { tenantId: event.tenant_id, typeKey: event.type_key, brand, language: contact.language });
}

/** The render context of a delivery: brand values, then the variables (secret ones included), plus the contact. */
export function deliveryContext(brand: BrandRow, variables: Record<string, unknown>, contact: ContactRow): Record<string, unknown> {
  return renderContext(brand, variables, {
    id: contact.id,
    external_id: contact.external_id,
    email: contact.email,
    name: contact.name,
    phone: contact.phone,
    language: contact.language,
    properties: contact.properties,
  });
}
