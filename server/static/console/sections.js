// The console's sections, in navigation order. A section is one module exporting
// { id, label, group, requires?, render({ root, tenant, tenants, navigate, paths }) }; `requires` names an
// API path that must exist on this install (optional capabilities appear once their routes do).
// Adding a page is one module and one line here.
import activity from './page-activity.js';
import types from './page-types.js';
import templates from './page-templates.js';
import brands from './page-brands.js';
import contacts from './page-contacts.js';
import members from './page-members.js';
import keys from './page-keys.js';
import transports from './page-transports.js';
import audit from './page-audit.js';
import { webhooks, topics, broadcasts, suppressions } from './page-optional.js';

export const SECTIONS = [activity, types, templates, brands, contacts, topics, broadcasts, suppressions, transports, webhooks, keys, members, audit];
