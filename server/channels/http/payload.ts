// The body of an http delivery when the type has no HTTP template of its own: the event, the contact,
// the variables (secret ones masked unless the transport opts in) and the message rendered from the
// type's templates (null when it has none). docs/channels/http.md documents this shape.
import type { ContactRow } from '../../base/db/contacts.ts';
import type { RenderedMessage } from '../render-delivery.ts';

/** What a secret variable shows as, unless the transport opts in (the event status shows the same). */
export const SECRET_MASK = '********';

export interface DefaultHttpBody {
  event_id: string;
  type: string;
  contact: {
    id: string;
    external_id: string;
    email: string | null;
    phone: string | null;
    name: string | null;
    language: string | null;
    timezone: string | null;
    properties: Record<string, unknown>;
  };
  variables: Record<string, unknown>;
  rendered: { title: string; body: string; action_url: string | null } | null;
}

/**
 * The variables as the endpoint gets them. `all` holds the secret ones too; a name not among the
 * public ones is secret (a trigger cannot give a name as both).
 */
export function bodyVariables(
  publicVariables: Record<string, unknown>,
  all: Record<string, unknown>,
  includeSecrets: boolean,
): Record<string, unknown> {
  if (includeSecrets) return { ...all };
  const out: Record<string, unknown> = { ...publicVariables };
  for (const name of Object.keys(all)) if (!Object.hasOwn(publicVariables, name)) out[name] = SECRET_MASK;
  return out;
}

export function defaultHttpBody(input: {
  eventId: string;
  type: string;
  contact: Pick<ContactRow, 'id' | 'external_id' | 'email' | 'phone' | 'name' | 'language' | 'timezone' | 'properties'>;
  variables: Record<string, unknown>;
  rendered: RenderedMessage | null;
}): DefaultHttpBody {
  const c = input.contact;
  return {
    event_id: input.eventId,
    type: input.type,
    contact: {
      id: c.id,
      external_id: c.external_id,
      email: c.email,
      phone: c.phone,
      name: c.name,
      language: c.language,
      timezone: c.timezone,
      properties: c.properties ?? {},
    },
    variables: input.variables,
    rendered: input.rendered
      ? { title: input.rendered.title, body: input.rendered.body, action_url: input.rendered.action_url }
      : null,
  };
}
