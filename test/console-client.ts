// What the admin console's specs drive the app with (through inject()).

import type { LightMyRequestResponse } from 'fastify';
import type { TestContext } from './helpers.js';

/** A browser in miniature: one cookie jar, the CSRF token of the last page, form posts. */
export class ConsoleClient {
  cookie: string | null = null;
  csrf = '';
  constructor(
    private readonly ctx: TestContext,
    private readonly host = '127.0.0.1:8080',
  ) {}

  async get(url: string): Promise<LightMyRequestResponse> {
    const response = await this.ctx.app.inject({ method: 'GET', url, headers: this.headers() });
    this.remember(response);
    return response;
  }

  async post(
    url: string,
    fields: Record<string, string | string[]>,
    options: { csrf?: boolean; origin?: string | null } = {},
  ): Promise<LightMyRequestResponse> {
    const body = new URLSearchParams();
    if (options.csrf !== false) body.append('_csrf', this.csrf);
    for (const [name, value] of Object.entries(fields)) {
      for (const one of Array.isArray(value) ? value : [value]) body.append(name, one);
    }
    const origin = options.origin === undefined ? `http://${this.host}` : options.origin;
    const response = await this.ctx.app.inject({
      method: 'POST',
      url,
      headers: {
        ...this.headers(),
        'content-type': 'application/x-www-form-urlencoded',
        ...(origin === null ? {} : { origin }),
      },
      payload: body.toString(),
    });
    this.remember(response);
    return response;
  }

  /**
   * Posts a multipart form as a browser without script does: the CSRF token first (unless
   * `csrf: false`), then the fields, then the file. `header: true` sends the token as htmx
   * does, in X-CSRF-Token, and not in the form.
   */
  async upload(
    url: string,
    fields: Record<string, string>,
    file: { name: string; content: string | Buffer; type?: string } | null,
    options: { csrf?: boolean; header?: boolean } = {},
  ): Promise<LightMyRequestResponse> {
    const boundary = '----tessera-test-boundary-7f3a';
    const parts: Buffer[] = [];
    const part = (headers: string, content: string | Buffer) =>
      parts.push(
        Buffer.from(`--${boundary}\r\n${headers}\r\n\r\n`),
        Buffer.from(content),
        Buffer.from('\r\n'),
      );
    if (options.csrf !== false && options.header !== true) {
      part('Content-Disposition: form-data; name="_csrf"', this.csrf);
    }
    for (const [name, value] of Object.entries(fields)) {
      part(`Content-Disposition: form-data; name="${name}"`, value);
    }
    if (file !== null) {
      part(
        `Content-Disposition: form-data; name="file"; filename="${file.name}"\r\nContent-Type: ${file.type ?? 'application/octet-stream'}`,
        file.content,
      );
    }
    parts.push(Buffer.from(`--${boundary}--\r\n`));
    const response = await this.ctx.app.inject({
      method: 'POST',
      url,
      headers: {
        ...this.headers(),
        'content-type': `multipart/form-data; boundary=${boundary}`,
        origin: `http://${this.host}`,
        ...(options.header === true ? { 'x-csrf-token': this.csrf } : {}),
      },
      payload: Buffer.concat(parts),
    });
    this.remember(response);
    return response;
  }

  async signIn(key: string): Promise<LightMyRequestResponse> {
    return this.post('/console/sign-in', { key }, { csrf: false });
  }

  private headers(): Record<string, string> {
    return { host: this.host, ...(this.cookie === null ? {} : { cookie: this.cookie }) };
  }

  private remember(response: LightMyRequestResponse): void {
    const setCookie = response.headers['set-cookie'];
    for (const line of Array.isArray(setCookie) ? setCookie : setCookie ? [setCookie] : []) {
      const [pair] = line.split(';');
      this.cookie = pair!.endsWith('=') ? null : pair!;
    }
    const token = /name="_csrf" value="([^"]+)"/.exec(response.body);
    if (token) this.csrf = token[1]!;
  }
}
