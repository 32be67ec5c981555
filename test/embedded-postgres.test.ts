// How Herald reaches its embedded PostgreSQL: through the cluster's Unix-domain socket when its
// directory can hold one, else over TCP on loopback; always with the cluster's own password.
import { describe, expect, inject, it } from 'vitest';
import pg from 'pg';
import { embeddedTcpUrl, embeddedUrl } from '../server/db/embedded-postgres.ts';

describe('embeddedUrl', () => {
  it("names the cluster's socket directory as the host (percent-encoded), which the drivers read as a socket directory", () => {
    expect(embeddedUrl('/var/lib/herald/postgres', 5433, 'herald', 's3cret/+')).toBe('postgres://postgres:s3cret%2F%2B@%2Fvar%2Flib%2Fherald%2Fpostgres%2Fsocket:5433/herald');
  });

  it('falls back to TCP on loopback for a directory too long for a socket path, or one that would need quoting', () => {
    const tcp = embeddedTcpUrl(5433, 'herald', 'pw');
    expect(tcp).toBe('postgres://postgres:pw@127.0.0.1:5433/herald');
    expect(embeddedUrl(`/srv/${'x'.repeat(90)}/postgres`, 5433, 'herald', 'pw')).toBe(tcp);
    expect(embeddedUrl('/srv/my herald/postgres', 5433, 'herald', 'pw')).toBe(tcp);
    expect(embeddedUrl('/srv/a,b/postgres', 5433, 'herald', 'pw')).toBe(tcp);
  });

  it.skipIf(Boolean(process.env.DATABASE_URL))('is how the test run reaches its embedded cluster: a Unix-socket connection', async () => {
    const client = new pg.Client({ connectionString: inject('adminUrl') });
    await client.connect();
    try {
      // inet_server_addr() is null exactly when the connection came through a Unix-domain socket.
      const { rows } = await client.query('SELECT inet_server_addr() AS addr');
      expect(rows[0].addr).toBeNull();
    } finally {
      await client.end();
    }
  });

  it.skipIf(Boolean(process.env.DATABASE_URL))('refuses a wrong password, on the socket and over TCP: the password is the only way in', async () => {
    const url = new URL(inject('adminUrl'));
    url.password = 'not-the-password';
    const tcp = new URL(url);
    tcp.hostname = '127.0.0.1';
    for (const candidate of [url, tcp]) {
      const client = new pg.Client({ connectionString: candidate.toString() });
      await expect(client.connect()).rejects.toThrow(/password authentication failed/);
      await client.end().catch(() => undefined);
    }
  });
});
