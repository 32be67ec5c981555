// The install's own SMTP server: system emails (verification, reset, invitations) and the default
// email transport of tenants without their own. From config.smtpUrl (herald init --smtp-url), else the
// default set with `herald transports email set-default` (stored encrypted as install secret "default_smtp").
import type { EntityManager } from '@mikro-orm/postgresql';
import { readInstallSecret } from '../../base/install-secrets.ts';
import type { Context } from '../../base/context.ts';
import { smtpSettingsFromUrl, type SmtpSettings } from './smtp.ts';
import { installSecretAad } from '../../base/crypto/aad.ts';

export const DEFAULT_SMTP_SECRET = 'default_smtp';

export interface InstallSmtp {
  settings: SmtpSettings;
  from: string;
}

export async function installSmtp(runtime: Context, em: EntityManager): Promise<InstallSmtp | null> {
  if (runtime.config.smtpUrl)
    return { settings: smtpSettingsFromUrl(runtime.config.smtpUrl), from: runtime.config.mailFrom };
  const ciphertext = await readInstallSecret(em, DEFAULT_SMTP_SECRET);
  if (!ciphertext) return null;
  const stored = JSON.parse(
    runtime.keyRing.decrypt(ciphertext, installSecretAad(DEFAULT_SMTP_SECRET)),
  ) as SmtpSettings & { from?: string };
  return { settings: stored, from: stored.from ?? runtime.config.mailFrom };
}
