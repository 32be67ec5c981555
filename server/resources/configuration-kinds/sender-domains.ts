// Sender domains in configuration as code: the domain only. Registering one generates its DKIM key
// (never exported); the DNS record to publish and the verification state stay in the API.
import { deleteSenderDomain, listSenderDomains, registerSenderDomain } from '../../channels/email/sender-domains.ts';
import type { ConfigurationKind } from './types.ts';

export const senderDomainsKind: ConfigurationKind<'sender_domains'> = {
  name: 'sender_domains',
  id: (entry) => entry.domain,
  normalise: (entry) => ({ domain: entry.domain }),
  async read({ tx, tenantId }) {
    return (await listSenderDomains(tx, tenantId)).map((row) => ({ domain: row.domain }));
  },
  async create({ runtime, tx, tenantId }, entry) {
    await registerSenderDomain(runtime, tx, tenantId, entry.domain);
  },
  async update() {
    // A domain has nothing but its name, which is its identity.
  },
  async remove({ tx, tenantId }, current) {
    await deleteSenderDomain(tx, tenantId, current.domain);
  },
};
