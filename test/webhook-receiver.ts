// A webhook receiver on loopback for delivery specs: it records every request, checks each
// with the official Standard Webhooks verifier, and answers as a test tells it to.

import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface ReceivedDelivery {
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  event: { id: string; type: string; [member: string]: unknown };
}

/**
 * What to do with the nth request (0-based): a status to answer, a status to answer after a
 * delay, or hang without answering.
 */
export type Behaviour = (request: number) => number | 'hang' | { status: number; delayMs: number };

export class WebhookReceiver {
  readonly received: ReceivedDelivery[] = [];
  /** Secrets the verifier must accept every delivery with (set after the webhook exists). */
  secrets: string[] = [];
  /** Deliveries the verifier refused, with why: must stay empty. */
  readonly refused: string[] = [];
  behaviour: Behaviour = () => 204;
  #requests = 0;
  readonly #server: http.Server;
  readonly #waiters: { count: number; resolve: () => void }[] = [];

  private constructor() {
    this.#server = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const answer = this.behaviour(this.#requests++);
        if (answer === 'hang') return;
        const { status, delayMs } =
          typeof answer === 'number' ? { status: answer, delayMs: 0 } : answer;
        const respond = () => {
          if (status >= 200 && status < 300) this.#accept(request, body);
          response.writeHead(status).end();
        };
        if (delayMs > 0) setTimeout(respond, delayMs);
        else respond();
      });
    });
  }

  static async start(): Promise<WebhookReceiver> {
    const receiver = new WebhookReceiver();
    receiver.#server.listen(0, '127.0.0.1');
    await once(receiver.#server, 'listening');
    return receiver;
  }

  get url(): string {
    const { port } = this.#server.address() as AddressInfo;
    return `http://127.0.0.1:${port}/hook`;
  }

  /** How many requests arrived, accepted or not. */
  get requests(): number {
    return this.#requests;
  }

  /** Resolves once `count` deliveries were accepted; rejects after `timeoutMs`. */
  async waitFor(count: number, timeoutMs = 20_000): Promise<void> {
    if (this.received.length >= count) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${this.received.length} of ${count} deliveries arrived`)),
        timeoutMs,
      );
      this.#waiters.push({
        count,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }

  /** The ids of the accepted deliveries, in arrival order. */
  ids(): string[] {
    return this.received.map((delivery) => delivery.id);
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    this.#server.close();
  }

  #accept(request: http.IncomingMessage, body: string): void {
    const headers = {
      'webhook-id': String(request.headers['webhook-id']),
      'webhook-timestamp': String(request.headers['webhook-timestamp']),
      'webhook-signature': String(request.headers['webhook-signature']),
    };
    for (const secret of this.secrets) {
      try {
        new Webhook(secret).verify(body, headers);
      } catch (error) {
        this.refused.push(`${headers['webhook-id']}: ${(error as Error).message}`);
      }
    }
    this.received.push({
      id: headers['webhook-id'],
      timestamp: headers['webhook-timestamp'],
      signature: headers['webhook-signature'],
      body,
      event: JSON.parse(body) as ReceivedDelivery['event'],
    });
    for (const waiter of [...this.#waiters]) {
      if (this.received.length >= waiter.count) {
        this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    }
  }
}
