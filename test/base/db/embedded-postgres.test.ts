// How Herald reaches its embedded PostgreSQL: through the cluster's Unix-domain socket when its
// directory can hold one, else over TCP on loopback; always with the cluster's own password. And a new
// cluster whose port, chosen by Herald, another program takes first.
import { afterAll, describe, expect, inject, it } from 'vitest';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { titleUnless, type SkipReason } from '../../support/skip-reasons.ts';
import {
  EmbeddedPortInUseError,
  embeddedTcpUrl,
  embeddedUrl,
  freePort,
  openChoosingPortAgain,
  startEmbeddedPostgres,
  type EmbeddedDatabase,
} from '../../../server/base/db/embedded-postgres.ts';

const externalServer: SkipReason = process.env.DATABASE_URL
  ? 'DATABASE_URL is set: this run uses that server, not an embedded cluster of its own (unset it to run these)'
  : null;

describe('embeddedUrl', () => {
  it("names the cluster's socket directory as the host (percent-encoded), which the drivers read as a socket directory", () => {
    expect(embeddedUrl('/var/lib/herald/postgres', 5433, 'herald', 's3cret/+')).toBe(
      'postgres://postgres:s3cret%2F%2B@%2Fvar%2Flib%2Fherald%2Fpostgres%2Fsocket:5433/herald',
    );
  });

  it('falls back to TCP on loopback for a directory too long for a socket path, or one that would need quoting', () => {
    const tcp = embeddedTcpUrl(5433, 'herald', 'pw');
    expect(tcp).toBe('postgres://postgres:pw@127.0.0.1:5433/herald');
    expect(embeddedUrl(`/srv/${'x'.repeat(90)}/postgres`, 5433, 'herald', 'pw')).toBe(tcp);
    expect(embeddedUrl('/srv/my herald/postgres', 5433, 'herald', 'pw')).toBe(tcp);
    expect(embeddedUrl('/srv/a,b/postgres', 5433, 'herald', 'pw')).toBe(tcp);
  });

  it.skipIf(externalServer)(
    titleUnless(externalServer, 'is how the test run reaches its embedded cluster: a Unix-socket connection'),
    async () => {
      const client = new pg.Client({ connectionString: inject('adminUrl') });
      await client.connect();
      try {
        // inet_server_addr() is null exactly when the connection came through a Unix-domain socket.
        const { rows } = await client.query('SELECT inet_server_addr() AS addr');
        expect(rows[0].addr).toBeNull();
      } finally {
        await client.end();
      }
    },
  );

  it.skipIf(externalServer)(
    titleUnless(
      externalServer,
      'refuses a wrong password, on the socket and over TCP: the password is the only way in',
    ),
    async () => {
      const url = new URL(inject('adminUrl'));
      url.password = 'not-the-password';
      const tcp = new URL(url);
      tcp.hostname = '127.0.0.1';
      for (const candidate of [url, tcp]) {
        const client = new pg.Client({ connectionString: candidate.toString() });
        await expect(client.connect()).rejects.toThrow(/password authentication failed/);
        await client.end().catch(() => undefined);
      }
    },
  );
});

describe('a new cluster on a port Herald chose, taken by another program first', { timeout: 120_000 }, () => {
  const cleanups: Array<() => unknown> = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  const listenOn = async (port: number): Promise<Server> => {
    const server = createServer().listen(port, '127.0.0.1');
    cleanups.push(() => new Promise((done) => server.close(done)));
    await new Promise((done) => server.once('listening', done));
    return server;
  };

  it('is started on another port, chosen again, whether the port was taken before initdb or while it ran', async () => {
    const root = mkdtempSync(join(tmpdir(), 'herald-port-'));
    chmodSync(root, 0o711); // the cluster runs as 'postgres' when tests run as root
    cleanups.push(() => rmSync(root, { recursive: true, force: true }));
    let port = await freePort();
    await listenOn(port); // taken before the start: the check before initdb sees it
    const used: number[] = [];
    let squatDuringStart = true;
    const open = () =>
      startEmbeddedPostgres({
        dir: join(root, 'pg'),
        port,
        database: 'herald',
        secretFile: join(root, 'secret.json'),
        create: true,
        // initdb's output arrives between the check and the postmaster's bind: take the port there, once
        // (the postmaster's own log lines come here too, once it runs).
        onLog: () => {
          if (!squatDuringStart) return;
          squatDuringStart = false;
          void listenOn(port);
        },
      });
    await expect(open()).rejects.toBeInstanceOf(EmbeddedPortInUseError);

    port = await freePort();
    squatDuringStart = true;
    await expect(open()).rejects.toThrow(EmbeddedPortInUseError); // after initdb: the postmaster could not bind
    expect(squatDuringStart).toBe(false);

    // The port is still taken: chosen again once, the cluster (initialised already) starts there.
    const cluster: EmbeddedDatabase = await openChoosingPortAgain(open, (next) => {
      used.push(next);
      port = next;
    });
    cleanups.push(() => cluster.stop());
    expect(used).toHaveLength(1);
    const client = new pg.Client({ connectionString: cluster.url });
    await client.connect();
    try {
      expect((await client.query<{ port: string }>('SHOW port')).rows[0]!.port).toBe(String(used[0]));
    } finally {
      await client.end();
    }
  });

  it('is not moved when the operator gave the port: the error stands', async () => {
    const port = await freePort();
    await listenOn(port);
    const root = mkdtempSync(join(tmpdir(), 'herald-port-'));
    chmodSync(root, 0o711);
    cleanups.push(() => rmSync(root, { recursive: true, force: true }));
    const open = () =>
      startEmbeddedPostgres({
        dir: join(root, 'pg'),
        port,
        database: 'herald',
        secretFile: join(root, 'secret.json'),
        create: true,
      });
    await expect(openChoosingPortAgain(open, null)).rejects.toThrow(new RegExp(`port ${port} on 127.0.0.1 is in use`));
  });
});
