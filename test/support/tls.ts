// A self-signed certificate for localhost/127.0.0.1, made with openssl, for the TLS peers (APNs,
// the web push service's front). Herald trusts it through config.providers.caFile.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
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
  if (cached) return cached;
  dir ??= runTempDir('herald-tls-');
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
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  cached = { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8'), caFile: certFile };
  return cached;
}
