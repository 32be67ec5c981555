// A real DNS server (dns2) on 127.0.0.1, UDP and TCP on one random port, answering TXT, A and AAAA
// queries from record maps the test edits; everything else answers NOERROR with no records (or
// NXDOMAIN when the name is unknown). Herald's resolver is pointed at it through config.dnsServers.
import dns2 from 'dns2';
import { promises as dns } from 'node:dns';
import { isIPv6, type Server as NetServer } from 'node:net';

export interface DnsServer {
  /** host:port, for config.dnsServers */
  address: string;
  /** name -> TXT records, each a list of character-strings (long values split at 255). */
  txt: Map<string, string[][]>;
  /** Publishes one TXT record value under a name (replacing what was there), split into 255-char strings. */
  publishTxt(name: string, value: string): void;
  /** name -> its addresses (A records for the IPv4 ones, AAAA for the IPv6 ones), answered with TTL 0. */
  addresses: Map<string, string[]>;
  /** Every question asked, in order (type as its name: A, AAAA, TXT, ...), for counting lookups. */
  queries: Array<{ name: string; type: string }>;
  /** Names that answer SERVFAIL. */
  failing: Set<string>;
  /** A dns.promises-compatible resolve(name, rrtype) that asks this server (for mailauth). */
  resolve(name: string, rrtype: string): Promise<unknown>;
  close(): Promise<void>;
}

export function splitTxt(value: string): string[] {
  const chunks: string[] = [];
  for (let i = 0; i < value.length; i += 255) chunks.push(value.slice(i, i + 255));
  return chunks;
}

export async function startDnsServer(): Promise<DnsServer> {
  const txt = new Map<string, string[][]>();
  const addresses = new Map<string, string[]>();
  const queries: Array<{ name: string; type: string }> = [];
  const failing = new Set<string>();
  const { Packet } = dns2;
  const typeNames = new Map(Object.entries(Packet.TYPE).map(([typeName, code]) => [code as number, typeName]));
  const handle: dns2.DnsHandler = (request, send) => {
    const response = Packet.createResponseFromRequest(request);
    const question = request.questions[0];
    if (question) {
      const name = question.name.toLowerCase().replace(/\.$/, '');
      queries.push({ name, type: typeNames.get(question.type) ?? String(question.type) });
      if (failing.has(name)) {
        response.header.rcode = 2; // SERVFAIL
      } else if (!txt.has(name) && !addresses.has(name)) {
        response.header.rcode = 3; // NXDOMAIN
      } else if (question.type === Packet.TYPE.A || question.type === Packet.TYPE.AAAA) {
        const v6 = question.type === Packet.TYPE.AAAA;
        // TTL 0: no resolver keeps the answer, so a test that changes it sees the next lookup follow.
        for (const address of (addresses.get(name) ?? []).filter((a) => isIPv6(a) === v6))
          response.answers.push({
            name: question.name,
            type: question.type,
            class: Packet.CLASS.IN,
            ttl: 0,
            address,
          } as never);
      } else if (question.type === Packet.TYPE.TXT && txt.has(name)) {
        for (const data of txt.get(name)!)
          response.answers.push({
            name: question.name,
            type: Packet.TYPE.TXT,
            class: Packet.CLASS.IN,
            ttl: 60,
            data,
          } as never);
      }
    }
    void send(response);
  };
  // Bind UDP on a random port, then TCP on the same port (c-ares retries over TCP after a truncated answer).
  for (let attempt = 0; ; attempt++) {
    const server = dns2.createServer({ udp: true, tcp: true, handle });
    const udp = (
      server as unknown as {
        servers: { udp: { listen(port: number, address: string): Promise<void>; address(): { port: number } } };
      }
    ).servers.udp;
    await udp.listen(0, '127.0.0.1');
    const port = udp.address().port;
    const tcp = (server as unknown as { servers: { tcp: NetServer } }).servers.tcp;
    // The DNS server re-emits its TCP server's errors, so a port taken over TCP is caught there: an
    // 'error' without a listener would be thrown.
    const ok = await new Promise<boolean>((resolve) => {
      const taken = () => resolve(false);
      server.once('error', taken);
      tcp.listen(port, '127.0.0.1', () => {
        server.off('error', taken);
        resolve(true);
      });
    });
    if (!ok) {
      (udp as unknown as { close(): void }).close();
      if (attempt < 10) continue;
      throw new Error('could not bind the test DNS server');
    }
    const address = `127.0.0.1:${port}`;
    const resolver = new dns.Resolver({ timeout: 2000, tries: 1 });
    resolver.setServers([address]);
    return {
      address,
      txt,
      addresses,
      queries,
      failing,
      publishTxt(name, value) {
        txt.set(name.toLowerCase(), [splitTxt(value)]);
      },
      resolve: (name, rrtype) => resolver.resolve(name, rrtype as 'TXT') as Promise<unknown>,
      close: async () => {
        await new Promise<void>((resolve) => tcp.close(() => resolve()));
        await new Promise<void>((resolve) =>
          (udp as unknown as { close(cb: () => void): void }).close(() => resolve()),
        );
      },
    };
  }
}
