// The certificate authorities Herald trusts for its outbound TLS connections (push providers, SMTP
// servers): the system's, plus the one config.providers.caFile names, for a provider or mail relay
// behind a private CA (and the test peers).
import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import type { Config } from '../config.ts';

/** The CA list to pass as `ca`; undefined means Node's default store (NODE_EXTRA_CA_CERTS included). */
export function trustedCas(config: Config): string[] | undefined {
  const caFile = config.providers.caFile;
  return caFile ? [...rootCertificates, readFileSync(caFile, 'utf8')] : undefined;
}
