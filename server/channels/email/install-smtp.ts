// The install's own SMTP server: system emails (verification, reset, invitations) and the default
// email transport of tenants without their own. From config.smtpUrl (herald init --smtp-url), else the
// default set with `herald transports email set-default` (stored encrypted as install secret "default_smtp").
import type { EntityManager } from '@mikro-orm/postgresql';
import { queryOne } from '../../base/db/sql.ts';
import type { Context } from '../../base/context.ts';
import { smtpSettingsFromUrl, type SmtpSettings } from './smtp.ts';
import { installSecretAad } from '../../base/crypto/aad.ts';

export const DEFAULT_SMTP_SECRET = 'default_smtp';
const INSTALL_SECRET = `SELECT ciphertext FROM install_secrets WHERE name = $1`;

export interface InstallSmtp {
  settings: SmtpSettings;
  from: string;
}

export async function installSmtp(runtime: Context, em: EntityManager): Promise<InstallSmtp | null> {
  if (runtime.config.smtpUrl)
    return { settings: smtpSettingsFromUrl(runtime.config.smtpUrl), from: runtime.config.mailFrom };
  const row = await queryOne<{ ciphertext: string }>(em, INSTALL_SECRET, [DEFAULT_SMTP_SECRET]);
  if (!row) return null;
  const stored = JSON.parse(
    runtime.keyRing.decrypt(row.ciphertext, installSecretAad(DEFAULT_SMTP_SECRET)),
  ) as SmtpSettings & { from?: string };
  return { settings: stored, from: stored.from ?? runtime.config.mailFrom };
}
