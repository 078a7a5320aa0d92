/**
 * Connection bookkeeping for shutdown (docs/operations.md#shutdown).
 *
 * Node's `server.closeIdleConnections()` closes keep-alive connections between requests, but not
 * a connection that was opened and has not sent a request yet (HTTP clients such as undici open
 * a spare socket after an aborted request; a hostile client can simply connect and stay silent).
 * Such a socket holds `server.close()` open until the client goes away or the header timeout
 * passes, which delays a SIGTERM by seconds or past the shutdown grace. This module tracks which
 * sockets have a request in flight, so shutdown can end every other one at once.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { Server as TlsServer } from 'node:tls';

/** What {@link trackConnections} gives shutdown. */
export interface ConnectionTracker {
  /** Destroys every socket with no request in flight (idle keep-alive and never-used ones). */
  closeQuiet(): void;
  /** Sockets open now, for tests and diagnostics. */
  readonly open: number;
}

/**
 * Starts tracking the sockets of `server`. Call before it listens.
 * @returns the tracker; it holds sockets only while they are open
 */
export function trackConnections(server: Server): ConnectionTracker {
  const sockets = new Set<Socket>();
  const busy = new Map<Socket, number>();
  // On a TLS server (the proxy listener) requests arrive on the TLS socket, not on the TCP one.
  server.on(server instanceof TlsServer ? 'secureConnection' : 'connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => {
      sockets.delete(socket);
      busy.delete(socket);
    });
  });
  server.on('request', (req: { socket: Socket }, res: { once(e: 'close', f: () => void): void }) => {
    const socket = req.socket;
    busy.set(socket, (busy.get(socket) ?? 0) + 1);
    res.once('close', () => {
      const n = (busy.get(socket) ?? 1) - 1;
      if (n > 0) busy.set(socket, n);
      else busy.delete(socket);
    });
  });
  return {
    closeQuiet() {
      for (const s of sockets) if (!busy.has(s)) s.destroy();
    },
    get open() {
      return sockets.size;
    },
  };
}
