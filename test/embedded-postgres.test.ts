// How Herald reaches its embedded PostgreSQL: through the cluster's Unix-domain socket when its
// directory can hold one, else over TCP on loopback.
import { describe, expect, inject, it } from 'vitest';
import pg from 'pg';
import { embeddedTcpUrl, embeddedUrl } from '../server/db/embedded-postgres.ts';

describe('embeddedUrl', () => {
  it('names the cluster directory as the host (percent-encoded), which the drivers read as a socket directory', () => {
    expect(embeddedUrl('/var/lib/herald/postgres', 5433, 'herald')).toBe('postgres://postgres:herald-embedded@%2Fvar%2Flib%2Fherald%2Fpostgres:5433/herald');
  });

  it('falls back to TCP on loopback for a directory too long for a socket path, or one that would need quoting', () => {
    const tcp = embeddedTcpUrl(5433, 'herald');
    expect(tcp).toBe('postgres://postgres:herald-embedded@127.0.0.1:5433/herald');
    expect(embeddedUrl(`/srv/${'x'.repeat(90)}/postgres`, 5433, 'herald')).toBe(tcp);
    expect(embeddedUrl('/srv/my herald/postgres', 5433, 'herald')).toBe(tcp);
    expect(embeddedUrl('/srv/a,b/postgres', 5433, 'herald')).toBe(tcp);
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
});
