// The connections a test server accepts: counted, and destroyed when the server closes (keep-alive
// connections and HTTP/2 sessions would otherwise hold its close back).
import type { Socket } from 'node:net';

export interface TrackedConnections {
  /** Connections accepted so far. */
  readonly accepted: number;
  /** Destroys every connection still open. */
  destroyAll(): void;
}

/** Tracks the connections of a server (anything that emits 'connection' with a socket). */
export function trackConnections(server: {
  on(event: 'connection', listener: (socket: Socket) => void): unknown;
}): TrackedConnections {
  const open = new Set<Socket>();
  let accepted = 0;
  server.on('connection', (socket: Socket) => {
    accepted++;
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });
  return {
    get accepted() {
      return accepted;
    },
    destroyAll() {
      for (const socket of open) socket.destroy();
    },
  };
}
