// Sender domains: registering a domain generates an RSA-2048 DKIM key pair (the private key encrypted
// under the key ring, bound to the row) and answers the TXT record to publish. Refresh looks the record
// up in DNS for real and moves the domain to verified (published and matching) or failed; a scheduled
// re-check (jobs/sender-domains-recheck.ts) does the same every day, so a record published later
// verifies its domain by itself and a record taken down stops the signing. Mail whose From address is
// on a verified domain (or a subdomain of one) is DKIM-signed: dkimSigningFor().
import { promises as dns } from 'node:dns';
import { generateKeyPair, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError, notFound } from '../../base/errors.ts';
import { newId } from '../../base/ids.ts';
import { execute, query, queryOne } from '../../base/db/sql.ts';
import type { Context } from '../../base/context.ts';
import type { DkimSigning } from './smtp.ts';
import type { DnsRecord, SenderDomainResponse, SenderDomainStatus } from '../../schemas/sender-domains.ts';
import { toIsoTimestamp } from '../../base/timestamps.ts';
import { dkimKeyAad } from '../../base/crypto/aad.ts';

interface SenderDomainRow {
  id: string;
  domain: string;
  status: SenderDomainStatus;
  dkim_selector: string;
  dkim_public_key: string;
  last_checked_at: Date | string | null;
  last_error: string | null;
}

const COLUMNS = 'id, domain, status, dkim_selector, dkim_public_key, last_checked_at, last_error';
const DNS_TIMEOUT_MS = 3000;
const generateRsaKeyPair = promisify(generateKeyPair);

const REGISTER_DOMAIN = `INSERT INTO sender_domains
       (id, tenant_id, domain, dkim_selector, dkim_public_key, dkim_private_key_ciphertext)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (tenant_id, domain) DO NOTHING RETURNING ${COLUMNS}`;
const LIST_DOMAINS = `SELECT ${COLUMNS} FROM sender_domains WHERE tenant_id = $1 ORDER BY domain`;
const GET_DOMAIN = `SELECT ${COLUMNS} FROM sender_domains WHERE tenant_id = $1 AND domain = $2`;
const DELETE_DOMAIN = `DELETE FROM sender_domains WHERE tenant_id = $1 AND domain = $2`;
const RECORD_CHECK = `UPDATE sender_domains SET status = $3, last_error = $4, last_checked_at = $5, updated_at = now()
      WHERE tenant_id = $1 AND id = $2 RETURNING ${COLUMNS}`;
const STALE_DOMAINS = `SELECT tenant_id, ${COLUMNS} FROM sender_domains
      WHERE last_checked_at IS NULL OR last_checked_at < $1
      ORDER BY last_checked_at NULLS FIRST, id LIMIT $2`;
const RECORD_RECHECK = `UPDATE sender_domains SET status = $3, last_error = $4, last_checked_at = $5, updated_at = now()
      WHERE tenant_id = $1 AND id = $2 AND status = $6`;
/** The verified domain among $2 that is the longest (the closest parent of the address's domain). */
const SIGNING_DOMAIN = `SELECT id, domain, dkim_selector, dkim_private_key_ciphertext FROM sender_domains
      WHERE tenant_id = $1 AND status = 'verified' AND domain = ANY($2::text[])
      ORDER BY length(domain) DESC LIMIT 1`;

export function dkimRecordName(selector: string, domain: string): string {
  return `${selector}._domainkey.${domain}`;
}

/** The DKIM key record (RFC 6376 section 3.6.1): p= is the base64 of the DER SubjectPublicKeyInfo. */
export function dkimRecordValue(publicKey: string): string {
  return `v=DKIM1; k=rsa; p=${publicKey}`;
}

function dnsRecords(row: SenderDomainRow): DnsRecord[] {
  return [
    { type: 'TXT', name: dkimRecordName(row.dkim_selector, row.domain), value: dkimRecordValue(row.dkim_public_key) },
  ];
}

export function toSenderDomainResponse(row: SenderDomainRow): SenderDomainResponse {
  return {
    domain: row.domain,
    status: row.status,
    dns_records: dnsRecords(row),
    last_checked_at: row.last_checked_at ? toIsoTimestamp(row.last_checked_at) : null,
    last_error: row.last_error,
  };
}

/**
 * A fresh selector per registration ("herald" + 8 hex): a re-registered domain never collides with a
 * stale record of an earlier key, and two tenants sending from one domain can both publish theirs.
 */
function newSelector(): string {
  return `herald${randomBytes(4).toString('hex')}`;
}

export async function registerSenderDomain(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  domain: string,
): Promise<SenderDomainRow> {
  // Asynchronous: RSA key generation takes tens of milliseconds that the event loop should not wait.
  const { publicKey, privateKey } = await generateRsaKeyPair('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'der' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const id = newId();
  const row = await queryOne<SenderDomainRow>(em, REGISTER_DOMAIN, [
    id,
    tenantId,
    domain,
    newSelector(),
    publicKey.toString('base64'),
    runtime.keyRing.encrypt(privateKey, dkimKeyAad(id)),
  ]);
  if (!row) throw new AppError('already_exists', `The sender domain ${domain} is already registered`);
  return row;
}

export async function listSenderDomains(em: EntityManager, tenantId: string): Promise<SenderDomainRow[]> {
  return query<SenderDomainRow>(em, LIST_DOMAINS, [tenantId]);
}

export async function getSenderDomain(em: EntityManager, tenantId: string, domain: string): Promise<SenderDomainRow> {
  const row = await queryOne<SenderDomainRow>(em, GET_DOMAIN, [tenantId, domain]);
  if (!row) throw notFound('Sender domain');
  return row;
}

export async function deleteSenderDomain(em: EntityManager, tenantId: string, domain: string): Promise<void> {
  const changed = await execute(em, DELETE_DOMAIN, [tenantId, domain]);
  if (changed === 0) throw notFound('Sender domain');
}

/** The outcome of one DKIM record lookup. `transient` failures say nothing about the record itself. */
type Check = { ok: true } | { ok: false; transient: boolean; error: string };

const ABSENT = new Set(['ENOTFOUND', 'ENODATA', 'NXDOMAIN']);

function resolverFor(runtime: Context): dns.Resolver {
  const resolver = new dns.Resolver({ timeout: DNS_TIMEOUT_MS, tries: 2 });
  if (runtime.config.dnsServers.length > 0) resolver.setServers([...runtime.config.dnsServers]);
  return resolver;
}

/** Tag-value list of a DKIM record ("v=DKIM1; k=rsa; p=...") -> tag map; whitespace inside values is folding. */
function dkimTags(record: string): Map<string, string> {
  const tags = new Map<string, string>();
  for (const part of record.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    tags.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).replace(/\s+/g, ''));
  }
  return tags;
}

async function checkDkimRecord(runtime: Context, row: SenderDomainRow): Promise<Check> {
  const name = dkimRecordName(row.dkim_selector, row.domain);
  let records: string[][];
  try {
    records = await resolverFor(runtime).resolveTxt(name);
  } catch (error) {
    const code = String((error as { code?: unknown }).code ?? 'EDNS');
    if (ABSENT.has(code)) return { ok: false, transient: false, error: `No TXT record found at ${name}` };
    return { ok: false, transient: true, error: `DNS lookup of ${name} failed (${code})` };
  }
  // A TXT record longer than 255 characters arrives as several strings: they concatenate (RFC 6376 3.6.2.2).
  const keys = records.map((chunks) => dkimTags(chunks.join(''))).filter((tags) => tags.has('p'));
  if (keys.length === 0)
    return { ok: false, transient: false, error: `The TXT record at ${name} is not a DKIM key record (no p= tag)` };
  const matches = keys.some(
    (tags) => tags.get('p') === row.dkim_public_key && (tags.get('k') ?? 'rsa').toLowerCase() === 'rsa',
  );
  if (!matches)
    return { ok: false, transient: false, error: `The DKIM record at ${name} does not hold this domain's public key` };
  return { ok: true };
}

/**
 * Checks the DKIM record in DNS now. Published and matching: verified. Absent or different: failed,
 * with the reason in last_error. A lookup that fails for another reason (timeout, SERVFAIL) fails a
 * pending domain but leaves a verified one verified, so a DNS hiccup never stops signing.
 */
export async function refreshSenderDomain(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  domain: string,
): Promise<SenderDomainRow> {
  const row = await getSenderDomain(em, tenantId, domain);
  const check = await checkDkimRecord(runtime, row);
  const status: SenderDomainStatus = check.ok
    ? 'verified'
    : check.transient && row.status === 'verified'
      ? 'verified'
      : 'failed';
  const updated = await queryOne<SenderDomainRow>(em, RECORD_CHECK, [
    tenantId,
    row.id,
    status,
    check.ok ? null : check.error,
    new Date(runtime.clock.now()),
  ]);
  if (!updated) throw notFound('Sender domain');
  return updated;
}

/**
 * The scheduled re-check of up to `limit` domains not checked for `staleMs`, the least recently checked
 * first. As refresh, with two differences, since nobody asked: a pending domain whose record is not
 * (yet) there stays pending, and so does every domain's status on a DNS failure that says nothing
 * about the record. Returns how many domains changed status, each change logged.
 */
export async function recheckSenderDomains(
  runtime: Context,
  em: EntityManager,
  options: { staleMs: number; limit: number },
): Promise<{ checked: number; changed: number }> {
  const rows = await query<SenderDomainRow & { tenant_id: string }>(em, STALE_DOMAINS, [
    new Date(runtime.clock.now() - options.staleMs),
    options.limit,
  ]);
  let changed = 0;
  for (const row of rows) {
    const check = await checkDkimRecord(runtime, row);
    const status: SenderDomainStatus = check.ok
      ? 'verified'
      : check.transient || row.status === 'pending'
        ? row.status
        : 'failed';
    // Only if the status is still the one read: a refresh meanwhile has the newer answer.
    const updated = await execute(em, RECORD_RECHECK, [
      row.tenant_id,
      row.id,
      status,
      check.ok ? null : check.error,
      new Date(runtime.clock.now()),
      row.status,
    ]);
    if (updated > 0 && status !== row.status) {
      changed++;
      runtime.logger.info('sender domain re-checked', {
        tenant_id: row.tenant_id,
        domain: row.domain,
        from: row.status,
        to: status,
        error: check.ok ? null : check.error,
      });
    }
  }
  return { checked: rows.length, changed };
}

/**
 * The DKIM signing settings for mail from `fromEmail`: when its domain, or the closest parent domain,
 * is a verified sender domain of the tenant. null otherwise, and when the private key cannot be
 * decrypted (its key-ring key is gone): the mail then goes out unsigned, and a warning is logged.
 */
export async function dkimSigningFor(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  fromEmail: string,
): Promise<DkimSigning | null> {
  const at = fromEmail.lastIndexOf('@');
  if (at < 0) return null;
  const domain = fromEmail
    .slice(at + 1)
    .replace(/[>\s]+$/, '')
    .replace(/\.$/, '')
    .toLowerCase();
  const labels = domain.split('.');
  const candidates = labels.slice(0, -1).map((_, i) => labels.slice(i).join('.'));
  if (candidates.length === 0) return null;
  const row = await queryOne<{
    id: string;
    domain: string;
    dkim_selector: string;
    dkim_private_key_ciphertext: string;
  }>(em, SIGNING_DOMAIN, [tenantId, candidates]);
  if (!row) return null;
  try {
    const privateKey = runtime.keyRing.decrypt(row.dkim_private_key_ciphertext, dkimKeyAad(row.id));
    return { domainName: row.domain, keySelector: row.dkim_selector, privateKey };
  } catch (error) {
    runtime.logger.warn('DKIM key of a sender domain is unreadable; sending unsigned', {
      tenant_id: tenantId,
      domain: row.domain,
      error: (error as Error).name,
    });
    return null;
  }
}
