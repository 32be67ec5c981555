// The benchmark's load generator: plain HTTP/1.1 keep-alive connections over net sockets, one request
// in flight per connection, as wrk or autocannon do. fetch() costs several times more CPU per request,
// and on a 2-core machine the load generator's CPU is taken from the server it measures.
import { connect, type Socket } from 'node:net';

export interface ClientResponse {
  status: number;
  body: string;
}

export class KeepAliveConnection {
  readonly #socket: Socket;
  #buffer: Buffer = Buffer.alloc(0);
  #waiting: { resolve: (r: ClientResponse) => void; reject: (e: Error) => void } | null = null;
  #closed = false;

  private constructor(socket: Socket) {
    this.#socket = socket;
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => {
      this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
      this.#parse();
    });
    const fail = (error: Error) => {
      this.#waiting?.reject(error);
      this.#waiting = null;
    };
    socket.on('error', fail);
    socket.on('close', () => {
      this.#closed = true;
      fail(new Error('connection closed'));
    });
  }

  static open(port: number, host = '127.0.0.1'): Promise<KeepAliveConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, host, () => resolve(new KeepAliveConnection(socket)));
      socket.once('error', reject);
    });
  }

  request(method: string, path: string, headers: Record<string, string>, body?: string): Promise<ClientResponse> {
    if (this.#waiting) throw new Error('one request at a time per connection');
    // The server closes idle keep-alive connections (after 5 s by default): open a new one then.
    if (this.#closed) return Promise.reject(new Error('connection closed by the server'));
    const payload = body === undefined ? '' : body;
    let head = `${method} ${path} HTTP/1.1\r\nhost: bench\r\ncontent-length: ${Buffer.byteLength(payload)}\r\n`;
    for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`;
    return new Promise((resolve, reject) => {
      this.#waiting = { resolve, reject };
      this.#socket.write(`${head}\r\n${payload}`);
    });
  }

  close(): void {
    this.#socket.destroy();
  }

  /** Completes the waiting request once a whole response (Content-Length or chunked) is buffered. */
  #parse(): void {
    const headEnd = this.#buffer.indexOf('\r\n\r\n');
    if (headEnd < 0 || !this.#waiting) return;
    const head = this.#buffer.subarray(0, headEnd).toString('latin1');
    const status = Number(head.slice(9, 12));
    const length = /\r\ncontent-length: *(\d+)/i.exec(head);
    let body: string;
    let consumed: number;
    if (length) {
      consumed = headEnd + 4 + Number(length[1]);
      if (this.#buffer.length < consumed) return;
      body = this.#buffer.subarray(headEnd + 4, consumed).toString('utf8');
    } else if (/\r\ntransfer-encoding: *chunked/i.test(head)) {
      const chunks: Buffer[] = [];
      let at = headEnd + 4;
      for (;;) {
        const lineEnd = this.#buffer.indexOf('\r\n', at);
        if (lineEnd < 0) return;
        const size = parseInt(this.#buffer.subarray(at, lineEnd).toString('latin1'), 16);
        if (this.#buffer.length < lineEnd + 2 + size + 2) return;
        chunks.push(this.#buffer.subarray(lineEnd + 2, lineEnd + 2 + size));
        at = lineEnd + 2 + size + 2;
        if (size === 0) break;
      }
      consumed = at;
      body = Buffer.concat(chunks).toString('utf8');
    } else {
      throw new Error('response without Content-Length or chunked encoding');
    }
    this.#buffer = this.#buffer.subarray(consumed);
    const waiting = this.#waiting;
    this.#waiting = null;
    waiting.resolve({ status, body });
  }
}
