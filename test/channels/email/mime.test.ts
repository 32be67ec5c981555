// A mail composed in one pass is byte for byte the message nodemailer's own streamed build gives for
// the same mail (same Message-ID and boundary; the Date header, the time of each build, aside), with
// the envelope nodemailer derives, whether it is written directly or through nodemailer's MIME tree:
// for a few mails by hand and for many generated from awkward pieces. It reaches a real SMTP server
// whole: the Message-ID reported is the one in the message, the envelope is the VERP one when given,
// and lines that SMTP would otherwise mangle (a leading dot, bare line feeds) arrive as written.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import MailComposer from 'nodemailer/lib/mail-composer';
import { composeMail, writesDirectly } from '../../../server/channels/email/mime.ts';
import { SmtpPool, type OutgoingMail } from '../../../server/channels/email/smtp.ts';
import { startSmtpPeer, type SmtpPeer } from '../../support/smtp-peer.ts';

const mails: Record<string, OutgoingMail> = {
  'ASCII, both parts, custom headers and a Reply-To': {
    from: '"Bench" <bench@example.test>',
    to: 'reader@example.test',
    subject: 'Order A-1 shipped',
    html: '<p>Hello Reader, order <b>A-1</b> is on its way.</p>',
    text: 'Hello Reader, order A-1 is on its way.',
    replyTo: 'support@example.test',
    headers: {
      'List-Unsubscribe': '<https://herald.example.test/u/abc>',
      'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
    },
  },
  'non-ASCII names, subject and domains, a VERP envelope': {
    from: '"Bénch ✓" <bench@exämple.test>',
    to: 'ü@exämple.test',
    subject: 'Ordér ✓ '.repeat(20),
    html: `<p>${'Héllo wörld = . \n.line\r\n'.repeat(50)} </p>  `,
    text: `${'x'.repeat(100)} trailing  \n.dot\n`.repeat(5),
    envelope: { from: 'bounce+d1@bounces.example.test', to: 'ü@exämple.test' },
  },
  'HTML only': { from: 'a@example.test', to: 'b@example.test', subject: 's', html: '<p>only html</p>' },
  'text only, empty HTML': { from: 'a@example.test', to: 'b@example.test', subject: 's', html: '', text: 'only text' },
  'CJK throughout': {
    from: 'a@example.test',
    to: 'b@example.test',
    subject: '日本語の件名',
    html: '日本語'.repeat(100),
    text: '日本語'.repeat(100),
  },
};

/** nodemailer's streamed build of the same mail, with the composed message's Message-ID and boundary, and its envelope. */
async function nodemailerBuild(
  mail: OutgoingMail,
  composed: string,
): Promise<{ message: string; envelope: { from: string | false; to: string[] } }> {
  const header = (name: string) => new RegExp(`^${name}: (.*)$`, 'mi').exec(composed)?.[1];
  const boundary = /boundary="--_NmP-([0-9a-f]+)-Part_1"/.exec(composed)?.[1];
  const root = new MailComposer({
    ...mail,
    messageId: header('Message-ID'),
    ...(boundary ? { baseBoundary: boundary } : {}),
  }).compile();
  const built = await new Promise<Buffer>((resolve, reject) =>
    root.build((error, message) => (error ? reject(error) : resolve(message))),
  );
  const { from, to } = root.getEnvelope();
  return { message: built.toString('utf8'), envelope: { from, to } };
}

const withoutDate = (message: string) => message.replace(/^Date: .*\r\n/m, '');

/** Mails put together from awkward pieces, the same ones on every run (a seeded generator). */
function generatedMails(count: number): OutgoingMail[] {
  let seed = 20261128;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const froms = [
    'bench@example.test',
    '"Bench" <bench@example.test>',
    'Acme Support <support@acme.test>',
    '"Bénch ✓" <bench@exämple.test>',
    '"Quote \\" me, please" <q@acme.test>',
    '<x@example.test>',
    '"Herald" <herald@mail.example.co>',
  ];
  const plainTos = [
    'reader@example.test',
    'first.last+tag@sub.example.co',
    "o'brien@example.test",
    'a@b.cd',
    'x_y-z@host-1.example.test',
  ];
  const otherTos = [
    'R@Example.test',
    'Reader <reader@example.test>',
    'ü@exämple.test',
    'r@xn--exmple-cua.test',
    'r@127.1',
    'a@b.c1',
    ['one@example.test', 'two@example.test'],
    'reader@example.test, other@example.test',
  ];
  const subjects = [
    '',
    '   ',
    'Order 1 shipped',
    `Order ${'long '.repeat(30)}shipped`,
    'x'.repeat(100),
    'Ordér ✓ shipped',
    '日本語の件名',
    'has =?utf-8?q?x?= inside',
    'line\nbreak',
    'ctl\u0001char',
    '"quoted" words',
    'tab\there',
  ];
  const bodies = [
    '',
    'Hello',
    'y'.repeat(76),
    `${'y'.repeat(77)}\n`,
    'Hello\r\n.dot line\r\n',
    `${'word '.repeat(40)}\n`,
    'x'.repeat(200),
    'Héllo wörld = café\n'.repeat(8),
    '日本語'.repeat(40),
    '=3D = =\n trailing  \n',
    '<p>Hello <b>there</b></p>',
    `<table>${'<tr><td style="padding:8px">cell</td></tr>'.repeat(20)}</table>`,
    'emoji 🎉 and ✓\r\n',
    `${'0123456789'.repeat(9)}\n`,
    '-= '.repeat(30),
  ];
  const headerSets: Array<Record<string, string> | undefined> = [
    undefined,
    {
      'List-Unsubscribe': '<https://herald.example.test/u/abc>',
      'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
    },
    { 'List-Unsubscribe': '<https://herald.example.test/u/ünï>', 'List-Unsubscribe-Post': '' },
    { 'List-Unsubscribe': `<https://herald.example.test/u/${'t'.repeat(90)}>` },
    { 'X-Campaign': 'spring' },
  ];
  const envelopes: Array<OutgoingMail['envelope']> = [
    undefined,
    undefined,
    { from: 'bounce+d1@bounces.example.test', to: 'reader@example.test' },
    { from: 'b@bounces.example.test', to: ['a@example.test', 'a@example.test'] },
    { from: 'B@Bounces.test', to: 'reader@example.test' },
  ];
  return Array.from({ length: count }, () => {
    const to = random() < 0.7 ? pick(plainTos) : pick(otherTos);
    const replyTo = random() < 0.3 ? pick(froms) : undefined;
    const headers = pick(headerSets);
    const envelope = pick(envelopes);
    return {
      from: pick(froms),
      to,
      subject: pick(subjects),
      html: pick(bodies),
      text: pick(bodies),
      ...(replyTo ? { replyTo } : {}),
      ...(headers ? { headers } : {}),
      ...(envelope ? { envelope } : {}),
    };
  });
}

describe('composeMail', () => {
  for (const [name, mail] of Object.entries(mails)) {
    it(`gives nodemailer's own message: ${name}`, async () => {
      const composed = composeMail(mail);
      const text = composed.message.toString('utf8');
      expect(text).toMatch(/^Message-ID: <[0-9a-f-]{36}@[^>]+>\r$/m);
      expect(text).toMatch(/^Date: .*\r$/m);
      const built = await nodemailerBuild(mail, text);
      expect(withoutDate(text)).toBe(withoutDate(built.message));
      expect(composed.envelope).toEqual(built.envelope);
    });
  }

  it("gives nodemailer's own message and envelope for 600 generated mails, written directly or through its MIME tree", async () => {
    const mails = generatedMails(600);
    const direct = mails.filter((mail) => writesDirectly(mail)).length;
    expect(direct).toBeGreaterThan(150); // both ways are well exercised
    expect(mails.length - direct).toBeGreaterThan(150);
    for (const mail of mails) {
      const composed = composeMail(mail);
      const text = composed.message.toString('utf8');
      const built = await nodemailerBuild(mail, text);
      expect({ mail, message: withoutDate(text), envelope: composed.envelope }).toEqual({
        mail,
        message: withoutDate(built.message),
        envelope: built.envelope,
      });
    }
  });

  it('takes the Message-ID domain from the envelope sender, else the From address (as nodemailer does)', () => {
    expect(composeMail(mails['ASCII, both parts, custom headers and a Reply-To']!).messageId).toMatch(
      /@example\.test>$/,
    );
    expect(composeMail(mails['non-ASCII names, subject and domains, a VERP envelope']!).messageId).toMatch(
      /@bounces\.example\.test>$/,
    );
    expect(
      composeMail({ from: '"X" <x@exämple.test>', to: 'y@example.test', subject: 's', text: 't' }).messageId,
    ).toMatch(/@xn--exmple-cua\.test>$/);
    const [a, b] = [composeMail(mails['HTML only']!), composeMail(mails['HTML only']!)];
    expect(a.messageId).not.toBe(b.messageId);
  });
});

describe('a composed mail over SMTP', () => {
  let peer: SmtpPeer;
  let pool: SmtpPool;
  beforeAll(async () => {
    peer = await startSmtpPeer();
    pool = new SmtpPool();
  });
  afterAll(async () => {
    pool.close();
    await peer.close();
  });

  it('arrives whole, with the Message-ID reported and the envelope given', async () => {
    const mail: OutgoingMail = {
      from: '"Bench" <bench@example.test>',
      to: 'reader@example.test',
      subject: 'Dots',
      text: 'first\n.second starts with a dot\n..third with two\nlast',
      html: '<p>first</p>\n.<p>dot</p>',
      envelope: { from: 'bounce+d2@bounces.example.test', to: 'reader@example.test' },
    };
    const sent = await pool.send({ host: peer.host, port: peer.port, secure: false }, mail);
    const received = await peer.waitFor((m) => m.parsed.subject === 'Dots');
    expect(received.parsed.messageId).toBe(sent.messageId);
    expect(received.envelope).toEqual({ from: 'bounce+d2@bounces.example.test', to: ['reader@example.test'] });
    expect(received.parsed.text?.trim()).toBe('first\n.second starts with a dot\n..third with two\nlast');
    expect(received.parsed.html).toBe('<p>first</p>\n.<p>dot</p>');
    expect(sent.accepted).toEqual(['reader@example.test']);
  });
});
