// Which SMTP refusals are the relay's own (they count towards its circuit) and which one message's
// (a recipient greylisted or over quota: the relay answered, so they do not): channels/email/transport.ts.
import { describe, expect, it } from 'vitest';
import { relayFault } from '../../../server/channels/email/transport.ts';

const refusal = (code: string, responseCode: number, message: string) =>
  Object.assign(new Error(message), { code, responseCode });

describe('relayFault', () => {
  it("takes a recipient's or a message's refusal as the message's", () => {
    expect(relayFault(refusal('EENVELOPE', 451, 'Try again later'))).toBe(false);
    expect(relayFault(refusal('EENVELOPE', 452, '452 4.2.2 Mailbox full'))).toBe(false);
    expect(relayFault(refusal('EENVELOPE', 450, '450 4.1.1 Greylisted, come back later'))).toBe(false);
    expect(relayFault(refusal('EMESSAGE', 552, '552 5.3.4 Message too big'))).toBe(false);
  });

  it("takes a refusal that speaks of the relay's own state, and every other failure, as the relay's", () => {
    expect(relayFault(refusal('EENVELOPE', 421, '421 4.4.2 Connection dropped'))).toBe(true);
    expect(relayFault(refusal('EENVELOPE', 452, '452 4.3.1 Insufficient system storage'))).toBe(true);
    expect(relayFault(refusal('EMESSAGE', 451, '451 4.4.0 DNS temporary failure'))).toBe(true);
    expect(relayFault(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ESOCKET' }))).toBe(true);
    expect(relayFault(null)).toBe(true);
  });
});
