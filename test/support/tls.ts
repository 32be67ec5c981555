// A self-signed certificate for localhost/127.0.0.1, made with openssl, for the TLS peers (APNs,
// the web push service's front, SMTP peers). Herald trusts it through config.providers.caFile.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runTempDir } from './tmp.ts';

export interface TestCertificate {
  cert: string;
  key: string;
  /** Path of the certificate (PEM), for config.providers.caFile. */
  caFile: string;
}

let cached: TestCertificate | null = null;

/** `dir`: where to write it, outside a test run (the benchmarks); the run's temp directory otherwise. */
export function testCertificate(dir?: string): TestCertificate {
  cached ??= selfSigned(dir ?? runTempDir('herald-tls-'));
  return cached;
}

/** Another self-signed certificate for the same names, which Herald does not trust. */
export function untrustedCertificate(): TestCertificate {
  return selfSigned(runTempDir('herald-tls-untrusted-'));
}

/**
 * A self-signed certificate for one DNS name only (no IP address), for a server reached by a name the
 * test DNS server answers; trusted once its file is in the app's providers.caFile.
 */
export function certificateFor(name: string): TestCertificate {
  return selfSigned(runTempDir('herald-tls-named-'), name);
}

function selfSigned(dir: string, name?: string): TestCertificate {
  const keyFile = join(dir, 'key.pem');
  const certFile = join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      '2',
      '-subj',
      `/CN=${name ?? 'localhost'}`,
      '-addext',
      name ? `subjectAltName=DNS:${name}` : 'subjectAltName=DNS:localhost,IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  return { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8'), caFile: certFile };
}

/**
 * A certificate for localhost/127.0.0.1 valid only on 1 January 2020, self-signed: trusted (its file
 * in caFile), a handshake with it fails as "certificate has expired"; untrusted, as a self-signed one.
 * `openssl ca` sets the dates (openssl req cannot date a certificate in the past).
 */
export function expiredCertificate(): TestCertificate {
  const dir = runTempDir('herald-tls-expired-');
  const file = (name: string) => join(dir, name);
  execFileSync(
    'openssl',
    [
      'req',
      '-new',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      file('key.pem'),
      '-out',
      file('req.csr'),
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  writeFileSync(file('index.txt'), '');
  writeFileSync(file('serial'), '01\n');
  writeFileSync(
    file('ca.cnf'),
    [
      '[ca]',
      'default_ca = ca',
      `database = ${file('index.txt')}`,
      `new_certs_dir = ${dir}`,
      `serial = ${file('serial')}`,
      'default_md = sha256',
      'policy = any',
      'copy_extensions = copy',
      '[any]',
      'commonName = supplied',
      '',
    ].join('\n'),
  );
  execFileSync(
    'openssl',
    [
      'ca',
      '-batch',
      '-config',
      file('ca.cnf'),
      '-selfsign',
      '-keyfile',
      file('key.pem'),
      '-in',
      file('req.csr'),
      '-out',
      file('cert.pem'),
      '-startdate',
      '20200101000000Z',
      '-enddate',
      '20200102000000Z',
      '-notext',
    ],
    { stdio: 'ignore' },
  );
  return {
    cert: readFileSync(file('cert.pem'), 'utf8'),
    key: readFileSync(file('key.pem'), 'utf8'),
    caFile: file('cert.pem'),
  };
}
