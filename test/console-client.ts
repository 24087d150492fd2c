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
