// The SMTP pool keeps one pooled transport per server and credentials, and closes the ones it no
// longer needs: idle too long, or the least recently used beyond its cap, never one that is sending.
// Within a transport, a connection is reused after each mail, also after one the server refused,
// renewed after its quota of mails, and replaced when the server ends it; a mail caught by a server
// ending an idle connection goes out on a new one.
import { createServer, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SmtpPool } from '../../../server/channels/email/smtp.ts';
import { classifySmtpError } from '../../../server/channels/email/transport.ts';
import { startSmtpPeer, type SmtpPeer } from '../../support/smtp-peer.ts';

let peers: SmtpPeer[] = [];
beforeAll(async () => {
  peers = await Promise.all([startSmtpPeer(), startSmtpPeer(), startSmtpPeer()]);
});
afterAll(async () => {
  await Promise.all(peers.map((p) => p.close()));
});

const settingsOf = (peer: SmtpPeer) => ({ host: peer.host, port: peer.port, secure: false });
const mail = (subject: string) => ({ from: 'pool@example.org', to: 'reader@example.org', subject, text: 'hello' });

describe('SmtpPool', () => {
  it('reuses one transport per server, and closes the least recently used one beyond its cap', async () => {
    const pool = new SmtpPool({ maxTransports: 2 });
    try {
      const [a, b, c] = peers as [SmtpPeer, SmtpPeer, SmtpPeer];
      await pool.send(settingsOf(a), mail('a1'));
      await pool.send(settingsOf(a), mail('a2'));
      expect(pool.size).toBe(1);
      expect(a.openConnections).toBe(1);
      await pool.send(settingsOf(b), mail('b1'));
      await pool.send(settingsOf(a), mail('a3')); // b is now the least recently used
      await pool.send(settingsOf(c), mail('c1'));
      expect(pool.size).toBe(2);
      await vi.waitFor(() => expect(b.openConnections).toBe(0));
      expect(a.openConnections).toBe(1);
      expect(c.openConnections).toBe(1);
      // A closed transport is opened again when needed.
      await pool.send(settingsOf(b), mail('b2'));
      expect((await b.waitFor((m) => m.parsed.subject === 'b2')).envelope.to).toEqual(['reader@example.org']);
    } finally {
      pool.close();
    }
  });

  it('closes a transport left idle, but not one that is still sending', async () => {
    let now = 0;
    const pool = new SmtpPool({ idleMs: 60_000, now: () => now });
    try {
      const [a, b] = peers as [SmtpPeer, SmtpPeer];
      await pool.send(settingsOf(a), mail('idle-a'));
      now += 30_000;
      const sending = pool.send(settingsOf(b), mail('busy-b')); // b is busy while the clock moves on
      now += 60_000;
      // a, idle 90 s, is in use again; b, idle 60 s by the time its send started, is still sending: both stay.
      await pool.send(settingsOf(a), mail('idle-a2'));
      expect(pool.size).toBe(2);
      await sending;
      now += 61_000;
      await pool.send(settingsOf(a), mail('idle-a3'));
      expect(pool.size).toBe(1); // b idle past idleMs, no longer sending
      await vi.waitFor(() => expect(b.openConnections).toBe(0));
    } finally {
      pool.close();
    }
    await vi.waitFor(() => expect(peers.reduce((n, p) => n + p.openConnections, 0)).toBe(0));
  });

  it('keeps at most maxConnections open to one server, the other mails waiting their turn', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const holdRecipients = new Map(Array.from({ length: 6 }, (_, i) => [`held${i}@example.org`, held] as const));
    const peer = await startSmtpPeer({ holdRecipients });
    const pool = new SmtpPool({ maxConnections: 2 });
    try {
      const sends = [...holdRecipients.keys()].map((to, i) =>
        pool.send(settingsOf(peer), { ...mail(`held-${i}`), to }),
      );
      await vi.waitFor(() => expect(peer.openConnections).toBe(2));
      await new Promise((resolve) => setTimeout(resolve, 200)); // a third connection would have opened by now
      expect(peer.openConnections).toBe(2);
      release();
      const sent = await Promise.all(sends);
      expect(sent.map((s) => s.accepted)).toEqual([...holdRecipients.keys()].map((to) => [to]));
      expect(peer.messages).toHaveLength(6);
    } finally {
      pool.close();
      await peer.close();
    }
  });

  it('never closes the transport it is about to send with, even when every other one is busy', async () => {
    const pool = new SmtpPool({ maxTransports: 1 });
    try {
      const [a, b] = peers as [SmtpPeer, SmtpPeer];
      const busy = pool.send(settingsOf(a), mail('busy-a')); // a is sending: it cannot be closed
      await pool.send(settingsOf(b), mail('over-cap-b')); // over the cap, with nothing idle to close
      await busy;
      expect((await b.waitFor((m) => m.parsed.subject === 'over-cap-b')).envelope.to).toEqual(['reader@example.org']);
      expect((await a.waitFor((m) => m.parsed.subject === 'busy-a')).envelope.to).toEqual(['reader@example.org']);
    } finally {
      pool.close();
    }
  });

  it('keeps a connection after a mail the server refused, and sends the next one over it', async () => {
    const peer = await startSmtpPeer({ rejectRecipients: ['nobody@example.org'] });
    const pool = new SmtpPool();
    try {
      const refused = await pool
        .send(settingsOf(peer), { ...mail('refused'), to: 'nobody@example.org' })
        .catch((error: unknown) => error);
      expect(refused).toMatchObject({ code: 'EENVELOPE', responseCode: 550 });
      expect(classifySmtpError(refused).retryable).toBe(false);
      await pool.send(settingsOf(peer), mail('after-refusal'));
      expect((await peer.waitFor((m) => m.parsed.subject === 'after-refusal')).envelope.to).toEqual([
        'reader@example.org',
      ]);
      expect(peer.connectionsOpened).toBe(1);
    } finally {
      pool.close();
      await peer.close();
    }
  });

  it('renews a connection after maxMessages mails', async () => {
    const peer = await startSmtpPeer();
    const pool = new SmtpPool({ maxMessages: 2 });
    try {
      for (let i = 0; i < 5; i++) await pool.send(settingsOf(peer), mail(`quota-${i}`));
      expect(peer.messages).toHaveLength(5);
      expect(peer.connectionsOpened).toBe(3);
      await vi.waitFor(() => expect(peer.openConnections).toBe(1));
    } finally {
      pool.close();
      await peer.close();
    }
  });

  it('sends a mail caught by the server ending an idle connection over a new one, once', async () => {
    const peer = await startSmtpPeer();
    const pool = new SmtpPool();
    try {
      await pool.send(settingsOf(peer), mail('before-drop'));
      peer.dropConnections(); // the pool hears of it only after the next send has started on that connection
      await pool.send(settingsOf(peer), mail('after-drop'));
      expect(peer.messages.map((m) => m.parsed.subject)).toEqual(['before-drop', 'after-drop']);
      expect(peer.connectionsOpened).toBe(2);
      // A connection the server ended while idle, and noticed as such, is simply replaced.
      peer.dropConnections();
      await vi.waitFor(() => expect(peer.openConnections).toBe(0));
      await new Promise((resolve) => setTimeout(resolve, 50));
      await pool.send(settingsOf(peer), mail('after-idle-drop'));
      expect(peer.connectionsOpened).toBe(3);
      expect(peer.messages).toHaveLength(3);
    } finally {
      pool.close();
      await peer.close();
    }
  });

  it('never sends a mail again once the server may have it: a connection cut after the data fails the mail', async () => {
    const peer = await startSmtpPeer({ dropAfterData: new Set(['cut@example.org']) });
    const pool = new SmtpPool();
    try {
      await pool.send(settingsOf(peer), mail('first'));
      const failure = await pool
        .send(settingsOf(peer), { ...mail('cut'), to: 'cut@example.org' })
        .catch((error: unknown) => error);
      expect(failure).toMatchObject({ code: 'ECONNECTION' });
      expect(classifySmtpError(failure).retryable).toBe(true); // the delivery's own retry decides, not the pool
      await pool.send(settingsOf(peer), mail('next'));
      expect(peer.messages.map((m) => m.parsed.subject)).toEqual(['first', 'cut', 'next']);
    } finally {
      pool.close();
      await peer.close();
    }
  });

  it('fails a mail with a retryable error when the server cannot be reached, and sends once it can', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const pool = new SmtpPool({ maxConnections: 2 });
    try {
      const unreachable = { host: '127.0.0.1', port, secure: false };
      const failures = await Promise.all(
        [1, 2, 3].map((i) => pool.send(unreachable, mail(`unreachable-${i}`)).catch((error: unknown) => error)),
      );
      for (const failure of failures) {
        expect(failure).toMatchObject({ code: 'ESOCKET' });
        expect(classifySmtpError(failure).retryable).toBe(true);
      }
      const [a] = peers as [SmtpPeer];
      await pool.send(settingsOf(a), mail('reachable'));
      expect((await a.waitFor((m) => m.parsed.subject === 'reachable')).envelope.to).toEqual(['reader@example.org']);
    } finally {
      pool.close();
    }
  });
});
