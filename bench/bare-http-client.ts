// The bare library limit of a text channel, in a process of its own (so that its CPU is its own, not
// the peer's): the same requests Herald's worker sends to the same peer, prebuilt, over Node's
// keep-alive agent with as many in flight as the worker sends at once. Prints one JSON line:
// {messages, seconds, cpu_seconds}. Run by bench/text-channels.ts:
//   node bench/bare-http-client.ts <requests.json> <messages> <in flight>
// where requests.json holds [{url, method, headers, body}], sent round-robin.
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';

interface Prebuilt {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string;
}

const [file, messagesArg, inFlightArg] = process.argv.slice(2);
const requests = JSON.parse(readFileSync(file!, 'utf8')) as Prebuilt[];
const messages = Number(messagesArg);
const inFlight = Number(inFlightArg);
const agent = new Agent({ keepAlive: true, maxSockets: inFlight });

function send(prebuilt: Prebuilt): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(prebuilt.url, { method: prebuilt.method, headers: prebuilt.headers, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(prebuilt.body);
  });
}

const cpuBefore = process.cpuUsage();
const started = performance.now();
let next = 0;
let failed = 0;
await Promise.all(
  Array.from({ length: inFlight }, async () => {
    while (next < messages) {
      const status = await send(requests[next++ % requests.length]!);
      if (status >= 300) failed++;
    }
  }),
);
const seconds = (performance.now() - started) / 1000;
const cpu = process.cpuUsage(cpuBefore);
agent.destroy();
process.stdout.write(`${JSON.stringify({ messages, failed, seconds, cpu_seconds: (cpu.user + cpu.system) / 1e6 })}\n`);
