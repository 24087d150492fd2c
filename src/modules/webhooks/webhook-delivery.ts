// One delivery attempt: the event JSON POSTed to the webhook's url, signed per the Standard
// Webhooks specification (https://www.standardwebhooks.com) with the `standardwebhooks`
// package, through the outbound fence.
//
// Isolation: every webhook has connection pools of its own (one socket, kept alive), so a
// receiver that hangs or trickles holds only its own webhook's connection; no pool, socket
// budget or worker is shared with another webhook, whoever owns it, even on the same origin.
// A deadline bounds the whole attempt (connect, send, read the answer), not a silence: a
// receiver that answers one byte at a time is cut off when it passes. Each new socket's
// address is checked in its own DNS lookup, so a pooled socket only ever talks to an address
// that passed the fence.

import type { Agent as HttpAgent } from 'node:http';
import type { Agent as HttpsAgent } from 'node:https';
import { LRUCache } from 'lru-cache';
import { nodeHttp, nodeHttps } from '../../http/node-http.js';
import { Webhook } from 'standardwebhooks';
import {
  OutboundRefusedError,
  type OutboundPolicy,
  fencedLookup,
  refuseTarget,
} from '../outbound-fence.js';

/** The whole of an attempt (connect, send, read the answer) must fit in this. */
export const DELIVERY_TIMEOUT_MS = 15_000;
/** How much of an answer is read (and thrown away): receivers owe us a status, not a body. */
const MAX_ANSWER_BYTES = 64 * 1024;
/** An idle kept-alive connection to a receiver is closed after this long. */
const IDLE_SOCKET_MS = 30_000;
/** Webhooks whose connection pools are kept; the least recently used beyond it are closed. */
const POOLS_KEPT = 10_000;

export interface AttemptOutcome {
  /** The receiver's status, or null when none came (refused, timed out, fenced off). */
  statusCode: number | null;
  /** Why it failed, in a few words; null on a 2xx. */
  error: string | null;
  durationMs: number;
  /**
   * The attempt was cut short by Tessera (the webhook was deleted or disabled, or the instance
   * is stopping): not the receiver's doing, so it is not recorded, and the event is sent again.
   */
  cancelled?: true;
  /** The deadline passed before the answer was complete. */
  timedOut?: true;
}

export interface SignedMessage {
  /** The event id: receivers deduplicate on it (it stays the same across retries). */
  id: string;
  payload: string;
  /** Every secret that signs: one, or two while a rotated-out secret overlaps. */
  secrets: readonly string[];
}

/** One webhook's own connection pools. */
interface WebhookPools {
  http: HttpAgent;
  https: HttpsAgent;
}

export class WebhookSender {
  readonly #signers = new Map<string, Webhook>();
  readonly #pools = new LRUCache<string, WebhookPools>({
    max: POOLS_KEPT,
    dispose: (pools) => destroyPools(pools),
  });
  readonly #timeoutMs: number;

  constructor(
    private readonly options: {
      policy: OutboundPolicy;
      timeoutMs?: number;
      userAgent: string;
    },
  ) {
    this.#timeoutMs = options.timeoutMs ?? DELIVERY_TIMEOUT_MS;
  }

  /** The webhook-signature header: `v1,<base64>` per secret, space-separated. */
  sign(message: SignedMessage, at: Date): string {
    return message.secrets
      .map((secret) => this.#signer(secret).sign(message.id, at, message.payload))
      .join(' ');
  }

  /**
   * POSTs the message once, on the webhook's own connection; never throws. `signal` cancels
   * the attempt (the connection is closed): the outcome then says `cancelled`.
   */
  send(
    webhookId: string,
    url: string,
    message: SignedMessage,
    at: Date,
    signal?: AbortSignal,
  ): Promise<AttemptOutcome> {
    const started = performance.now();
    const done = (statusCode: number | null, error: string | null): AttemptOutcome => ({
      statusCode,
      error,
      durationMs: Math.round(performance.now() - started),
    });
    if (signal?.aborted === true) return Promise.resolve(cancelled(done));
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return Promise.resolve(done(null, 'the url is not valid'));
    }
    const refusal = refuseTarget(target, this.options.policy, 'url');
    if (refusal !== null) return Promise.resolve(done(null, refusal));
    const body = Buffer.from(message.payload);
    const secure = target.protocol === 'https:';
    const pools = this.#poolsOf(webhookId);
    return new Promise((resolve) => {
      const request = (secure ? nodeHttps : nodeHttp).request(target, {
        method: 'POST',
        agent: secure ? pools.https : pools.http,
        lookup: fencedLookup(this.options.policy, 'url'),
        headers: {
          'content-type': 'application/json',
          'content-length': body.length,
          'user-agent': this.options.userAgent,
          'webhook-id': message.id,
          'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
          'webhook-signature': this.sign(message, at),
        },
      });
      let settled = false;
      let status: number | null = null;
      const settle = (outcome: AttemptOutcome) => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        signal?.removeEventListener('abort', cancel);
        resolve(outcome);
      };
      // The whole attempt, however steadily the receiver trickles: a timer, not a socket
      // timeout (which only measures silence).
      const deadline = setTimeout(() => {
        settle({
          ...done(status, `no complete answer within ${this.#timeoutMs} ms`),
          timedOut: true,
        });
        request.destroy();
      }, this.#timeoutMs);
      const cancel = () => {
        settle(cancelled(done));
        request.destroy();
      };
      signal?.addEventListener('abort', cancel, { once: true });
      request.once('error', (error: NodeJS.ErrnoException) => {
        settle(
          done(
            null,
            error instanceof OutboundRefusedError
              ? error.message
              : `connection failed (${error.code ?? error.message})`,
          ),
        );
      });
      request.once('response', (response) => {
        status = response.statusCode ?? 0;
        const answered = status;
        let read = 0;
        response.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > MAX_ANSWER_BYTES) response.destroy();
        });
        const finish = () => {
          if (answered >= 200 && answered < 300) settle(done(answered, null));
          // A redirect is not followed: the receiver must be configured where it is.
          else if (answered >= 300 && answered < 400)
            settle(done(answered, 'redirects are not followed'));
          else settle(done(answered, `HTTP ${answered}`));
        };
        response.once('end', finish);
        response.once('close', finish);
        response.once('error', finish);
      });
      request.end(body);
    });
  }

  /** Closes a webhook's connections (it was deleted or disabled); its next attempt opens new ones. */
  forget(webhookId: string): void {
    this.#pools.delete(webhookId);
  }

  close(): void {
    this.#pools.clear();
  }

  #poolsOf(webhookId: string): WebhookPools {
    let pools = this.#pools.get(webhookId);
    if (pools === undefined) {
      // One socket: a webhook's deliveries go one at a time, in order, so it never needs two.
      const options = { keepAlive: true, maxSockets: 1, timeout: IDLE_SOCKET_MS };
      pools = { http: new nodeHttp.Agent(options), https: new nodeHttps.Agent(options) };
      this.#pools.set(webhookId, pools);
    }
    return pools;
  }

  #signer(secret: string): Webhook {
    let signer = this.#signers.get(secret);
    if (signer === undefined) {
      if (this.#signers.size > 1000) this.#signers.clear();
      signer = new Webhook(secret);
      this.#signers.set(secret, signer);
    }
    return signer;
  }
}

function cancelled(
  done: (statusCode: number | null, error: string | null) => AttemptOutcome,
): AttemptOutcome {
  return { ...done(null, 'cancelled'), cancelled: true };
}

function destroyPools(pools: WebhookPools): void {
  pools.http.destroy();
  pools.https.destroy();
}
