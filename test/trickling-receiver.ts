// A receiver on loopback that answers some paths at once and trickles on others: the status
// line and headers, then one byte at a time, forever (until the connection is closed). It
// keeps count of the trickles in progress, so a spec can see a connection close.

import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export class TricklingReceiver {
  /** Paths that trickle; every other path answers 204 at once. */
  readonly trickle = new Set<string>();
  /** Every request that arrived: its path and webhook-id. */
  readonly arrived: { path: string; eventId: string }[] = [];
  /** Requests answered 204, by path. */
  readonly accepted: { path: string; eventId: string }[] = [];
  #trickling = 0;
  #closedTrickles = 0;
  readonly #server: http.Server;

  private constructor(private readonly byteEveryMs: number) {
    this.#server = http.createServer((request, response) => {
      const path = request.url ?? '/';
      const eventId = String(request.headers['webhook-id']);
      request.resume();
      request.on('end', () => {
        this.arrived.push({ path, eventId });
        if (!this.trickle.has(path)) {
          this.accepted.push({ path, eventId });
          response.writeHead(204).end();
          return;
        }
        this.#trickling += 1;
        response.writeHead(200, { 'content-type': 'text/plain' });
        response.flushHeaders();
        const timer = setInterval(() => response.write('.'), this.byteEveryMs);
        response.once('close', () => {
          clearInterval(timer);
          this.#trickling -= 1;
          this.#closedTrickles += 1;
        });
      });
    });
  }

  static async start(byteEveryMs = 100): Promise<TricklingReceiver> {
    const receiver = new TricklingReceiver(byteEveryMs);
    receiver.#server.listen(0, '127.0.0.1');
    await once(receiver.#server, 'listening');
    return receiver;
  }

  /** The URL of a path on this receiver (one origin for every path). */
  url(path: string): string {
    const { port } = this.#server.address() as AddressInfo;
    return `http://127.0.0.1:${port}${path}`;
  }

  /** Trickling answers whose connection is still open. */
  get trickling(): number {
    return this.#trickling;
  }

  /** Trickling answers whose connection was closed (by Tessera: the receiver never ends one). */
  get closedTrickles(): number {
    return this.#closedTrickles;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    this.#server.close();
  }
}
