// One delivery attempt: the event JSON POSTed to the webhook's url, signed per the Standard
// Webhooks specification (https://www.standardwebhooks.com) with the `standardwebhooks`
// package, through the outbound fence. Connections are kept alive per origin: each new
// socket's address is checked in its own DNS lookup, so a pooled socket only ever talks to
// an address that passed the fence.

import http from 'node:http';
import https from 'node:https';
import { Webhook } from 'standardwebhooks';
import {
  OutboundRefusedError,
  type OutboundPolicy,
  fencedLookup,
  refuseTarget,
} from '../outbound-fence.js';

/** A receiver that does not answer within this long has failed the attempt. */
export const DELIVERY_TIMEOUT_MS = 15_000;
/** How much of an answer is read (and thrown away): receivers owe us a status, not a body. */
const MAX_ANSWER_BYTES = 64 * 1024;

export interface AttemptOutcome {
  /** The receiver's status, or null when none came (refused, timed out, fenced off). */
  statusCode: number | null;
  /** Why it failed, in a few words; null on a 2xx. */
  error: string | null;
  durationMs: number;
}

export interface SignedMessage {
  /** The event id: receivers deduplicate on it (it stays the same across retries). */
  id: string;
  payload: string;
  /** Every secret that signs: one, or two while a rotated-out secret overlaps. */
  secrets: readonly string[];
}

export class WebhookSender {
  readonly #signers = new Map<string, Webhook>();
  readonly #httpAgent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  readonly #httpsAgent = new https.Agent({ keepAlive: true, maxSockets: 4 });

  constructor(
    private readonly options: {
      policy: OutboundPolicy;
      timeoutMs?: number;
      userAgent: string;
    },
  ) {}

  /** The webhook-signature header: `v1,<base64>` per secret, space-separated. */
  sign(message: SignedMessage, at: Date): string {
    return message.secrets
      .map((secret) => this.#signer(secret).sign(message.id, at, message.payload))
      .join(' ');
  }

  /** POSTs the message once; never throws. */
  send(url: string, message: SignedMessage, at: Date): Promise<AttemptOutcome> {
    const started = performance.now();
    const done = (statusCode: number | null, error: string | null): AttemptOutcome => ({
      statusCode,
      error,
      durationMs: Math.round(performance.now() - started),
    });
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
    return new Promise((resolve) => {
      const request = (secure ? https : http).request(target, {
        method: 'POST',
        agent: secure ? this.#httpsAgent : this.#httpAgent,
        lookup: fencedLookup(this.options.policy, 'url'),
        timeout: this.options.timeoutMs ?? DELIVERY_TIMEOUT_MS,
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
      const settle = (outcome: AttemptOutcome) => {
        if (settled) return;
        settled = true;
        resolve(outcome);
      };
      request.once('timeout', () => {
        request.destroy();
        settle(done(null, `no answer within ${this.options.timeoutMs ?? DELIVERY_TIMEOUT_MS} ms`));
      });
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
        const status = response.statusCode ?? 0;
        let read = 0;
        response.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > MAX_ANSWER_BYTES) response.destroy();
        });
        const finish = () => {
          if (status >= 200 && status < 300) settle(done(status, null));
          // A redirect is not followed: the receiver must be configured where it is.
          else if (status >= 300 && status < 400)
            settle(done(status, 'redirects are not followed'));
          else settle(done(status, `HTTP ${status}`));
        };
        response.once('end', finish);
        response.once('close', finish);
        response.once('error', finish);
      });
      request.end(body);
    });
  }

  close(): void {
    this.#httpAgent.destroy();
    this.#httpsAgent.destroy();
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
