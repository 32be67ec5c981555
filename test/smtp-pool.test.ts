// The SMTP pool keeps one pooled transport per server and credentials, and closes the ones it no
// longer needs: idle too long, or the least recently used beyond its cap, never one that is sending.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SmtpPool } from '../server/email/smtp.ts';
import { startSmtpPeer, type SmtpPeer } from './support/smtp-peer.ts';

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
      const sends = [...holdRecipients.keys()].map((to, i) => pool.send(settingsOf(peer), { ...mail(`held-${i}`), to }));
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
});
