// tessera-test: both-stores
// The admin console in a real browser: Debian's chromium driven by playwright-core, against
// Tessera started as `npm start` runs it (node dist/main.js), on the store of this pass
// (TEST_STORE). Each page's main task end to end, one of them by keyboard only; every page at
// 1280 px in the light and the dark colour scheme and at 360 px, with axe-core in each (no
// violation at all) and nothing wider than a 360 px screen; the CSP on every response and no
// request to another host; session expiry, sign-out, and a cross-site form post refused.
//
// Needs chromium (`apt-get install chromium`, or CHROMIUM_PATH). TESSERA_BROWSER_TESTS=skip
// skips it with the reason printed (CI does so on its second Node.js line). Screenshots go to
// TESSERA_SCREENSHOTS (a directory; `npm run console:screenshots` writes docs/console/).

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { type Server, createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { AxeBuilder } from '@axe-core/playwright';
import { type Browser, type BrowserContext, type Page, chromium } from 'playwright-core';
import { TEST_STORE } from './helpers.js';
import { createTestSchema, databaseUrlFor, postgresUnavailable } from './postgres.js';
import { skipUnless } from './required-service.js';
import { callServer, startServerProcess } from './server-process.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/**
 * Pages look the same whatever the store: the SQLite pass checks each one at both widths and in
 * both colour schemes; the PostgreSQL pass, at 1280 px in the light scheme only, to keep the
 * suite's time in check.
 */
const EVERY_WAY = TEST_STORE === 'sqlite';
const WIDE = { width: 1280, height: 860 };
const NARROW = { width: 360, height: 780 };
/** The page's background in each colour scheme (--wash). */
const BACKGROUND = { light: 'rgb(244, 246, 248)', dark: 'rgb(13, 17, 23)' };
const SCREENSHOTS = process.env.TESSERA_SCREENSHOTS;

async function whyNotRun(): Promise<string | false> {
  if (process.env.TESSERA_BROWSER_TESTS === 'skip') {
    const reason = 'browser tests skipped: TESSERA_BROWSER_TESTS=skip';
    process.stdout.write(`# ${reason}\n`);
    return reason;
  }
  const missing = existsSync(CHROMIUM) ? undefined : `no chromium at ${CHROMIUM}`;
  const chromiumSkip = skipUnless('browser (chromium)', missing);
  if (chromiumSkip !== false) return chromiumSkip;
  if (TEST_STORE === 'postgres') return skipUnless('PostgreSQL', await postgresUnavailable());
  return false;
}

/** The axe-core findings of one page, by impact. */
interface AxeSummary {
  page: string;
  violations: { id: string; impact: string | null | undefined; nodes: number }[];
}

async function startConsoleServer(env: Record<string, string> = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), 'tessera-console-browser-'));
  const databaseUrl =
    TEST_STORE === 'postgres'
      ? databaseUrlFor(await createTestSchema())
      : `sqlite:${join(dataDir, 'tessera.db')}`;
  const adminKey = `tsr_browser_${randomBytes(24).toString('base64url')}`;
  const server = await startServerProcess(process.execPath, ['dist/main.js'], {
    DATABASE_URL: databaseUrl,
    IAM_DATA_DIR: dataDir,
    IAM_BOOTSTRAP_API_KEY: adminKey,
    IAM_AUTH_FAILURES_PER_MINUTE: '0',
    // The webhook suite's receivers are on loopback.
    IAM_ALLOW_INSECURE_WEBHOOKS: 'true',
    ...env,
  });
  return {
    server,
    adminKey,
    stop: async () => {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

describe('the admin console in Chromium', { timeout: 900_000 }, async () => {
  const skip = await whyNotRun();
  let console_: Awaited<ReturnType<typeof startConsoleServer>>;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const axeResults: AxeSummary[] = [];
  /** Hosts other than the server's that the browser asked for (the attacker page aside). */
  const foreignRequests: string[] = [];
  /** Responses of the server without the console's CSP. */
  const withoutCsp: string[] = [];
  const cspViolations: string[] = [];
  let attacker: Server | undefined;
  /** A webhook receiver answering 204 to everything. */
  let receiver: Server | undefined;
  let attackerOrigin = '';
  /** The hosts of the Tessera servers of this file. */
  const serverHosts = new Set<string>();

  before(async () => {
    if (skip !== false) return;
    console_ = await startConsoleServer();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    context = await browser.newContext({ viewport: WIDE, colorScheme: 'light' });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], {
      origin: console_.server.baseUrl,
    });
    page = await context.newPage();
    serverHosts.add(new URL(console_.server.baseUrl).host);
    context.on('request', (request) => {
      const url = new URL(request.url());
      if (url.origin === attackerOrigin) return;
      if (!serverHosts.has(url.host)) foreignRequests.push(request.url());
    });
    context.on('response', (response) => {
      const url = new URL(response.url());
      if (!serverHosts.has(url.host)) return;
      const policy = response.headers()['content-security-policy'] ?? '';
      if (!policy.includes("default-src 'self'") || !policy.includes("frame-ancestors 'none'")) {
        withoutCsp.push(`${response.status()} ${response.url()}`);
      }
    });
    page.on('console', (message) => {
      if (/Content Security Policy|Refused to/.test(message.text())) {
        cspViolations.push(
          `${page.url()}: ${message.text().slice(0, 120)} at ${JSON.stringify(message.location())}`,
        );
      }
    });
  });

  after(async () => {
    if (skip !== false) return;
    await browser?.close();
    await console_?.stop();
    attacker?.close();
    receiver?.close();
    const counts = new Map<string, number>();
    for (const result of axeResults) {
      for (const violation of result.violations) {
        const impact = violation.impact ?? 'unknown';
        counts.set(impact, (counts.get(impact) ?? 0) + 1);
      }
    }
    process.stdout.write(
      `# axe-core on ${axeResults.length} console pages (${TEST_STORE}): ` +
        `${[...counts].map(([impact, n]) => `${n} ${impact}`).join(', ') || 'no violation'}\n`,
    );
  });

  const url = (path: string) => `${console_.server.baseUrl}${path}`;

  /** axe-core on the page as it is: no violation at all, whatever its impact. */
  async function axe(name: string, target: Page): Promise<void> {
    const results = await new AxeBuilder({ page: target }).analyze();
    const violations = results.violations.map((violation) => ({
      id: violation.id,
      impact: violation.impact,
      nodes: violation.nodes.length,
    }));
    axeResults.push({ page: name, violations });
    assert.deepEqual(
      results.violations.map(
        (violation) =>
          `${violation.impact ?? ''} ${violation.id}: ${violation.help} (${violation.nodes.map((n) => n.target.join(' ')).join(', ')})`,
      ),
      [],
      `${name}: axe-core violations`,
    );
  }

  /**
   * On a narrow screen: the page is no wider than the viewport (a table scrolls in its own box),
   * and the header holds its items (each link and button inside the dark bar, none off-screen).
   */
  async function checkFits(name: string, target: Page): Promise<void> {
    // Runs in the page (a string: these tests are compiled without the DOM's types).
    const found = (await target.evaluate(`(() => {
      const width = document.documentElement.clientWidth;
      const outside = (rect, box) =>
        rect.left < box.left - 1 || rect.right > box.right + 1 || rect.top < box.top - 1 ||
        rect.bottom > box.bottom + 1;
      const wide = [...document.querySelectorAll('main *, header *')]
        .filter((element) => !element.closest('.table-box, .visually-hidden, .skip'))
        .filter((element) => {
          const rect = element.getBoundingClientRect();
          return rect.width > 0 && (rect.right > width + 1 || rect.left < -1);
        })
        .map((element) => element.tagName.toLowerCase() + '.' + element.className + ' ' +
          Math.round(element.getBoundingClientRect().right) + ' px');
      const header = document.querySelector('header.top').getBoundingClientRect();
      const loose = [...document.querySelectorAll('header.top a, header.top button')]
        .filter((element) => outside(element.getBoundingClientRect(), header))
        .map((element) => element.textContent.trim());
      return { width, scrollWidth: document.documentElement.scrollWidth, wide, loose };
    })()`)) as { width: number; scrollWidth: number; wide: string[]; loose: string[] };
    assert.ok(
      found.scrollWidth <= found.width,
      `${name}: the page is ${found.scrollWidth} px wide on a ${found.width} px screen`,
    );
    assert.deepEqual(found.wide.slice(0, 5), [], `${name}: wider than the screen`);
    assert.deepEqual(found.loose, [], `${name}: outside the header's bar`);
  }

  async function checkScheme(name: string, target: Page, scheme: 'light' | 'dark') {
    await target.emulateMedia({ colorScheme: scheme });
    const background = await target.evaluate(
      `getComputedStyle(document.documentElement).backgroundColor`,
    );
    assert.equal(background, BACKGROUND[scheme], `${name}: the ${scheme} scheme's background`);
  }

  /**
   * The page as it is, three ways, axe-core in each: 1280 px light, 1280 px dark, 360 px dark
   * (colour contrast does not change with the width, nor the layout with the scheme); at 360 px
   * nothing wider than the screen. Back to 1280 px light after. `shots` names the screenshots
   * to take on the way (`narrow`: 360 px, light).
   */
  async function checkPage(
    name: string,
    shots: { light?: string; dark?: string; narrow?: string } = {},
    target: Page = page,
  ): Promise<void> {
    await axe(`${name} (1280 px, light)`, target);
    if (shots.light !== undefined) await screenshot(shots.light, target);
    if (!EVERY_WAY) return;
    await checkScheme(name, target, 'dark');
    await axe(`${name} (1280 px, dark)`, target);
    if (shots.dark !== undefined) await screenshot(shots.dark, target);
    await target.setViewportSize(NARROW);
    await checkFits(name, target);
    await axe(`${name} (360 px, dark)`, target);
    await checkScheme(name, target, 'light');
    if (shots.narrow !== undefined) await screenshot(shots.narrow, target);
    await target.setViewportSize(WIDE);
  }

  async function screenshot(name: string, target: Page = page): Promise<void> {
    const directory = SCREENSHOTS === undefined ? null : resolve(SCREENSHOTS);
    if (directory === null || TEST_STORE !== 'sqlite') return;
    mkdirSync(directory, { recursive: true });
    await target.screenshot({ path: join(directory, `${name}.png`) });
  }

  /** Presses Tab until the focused element is the one named; the keyboard's way to a control. */
  async function tabTo(name: string | RegExp, limit = 60): Promise<void> {
    for (let presses = 0; presses < limit; presses++) {
      await page.keyboard.press('Tab');
      // Runs in the page (a string: these tests are compiled without the DOM's types).
      const focused = (await page.evaluate(`(() => {
        const element = document.activeElement;
        if (element === null) return '';
        const labelled = element.id
          ? document.querySelector('label[for="' + element.id + '"]')?.textContent
          : null;
        return (labelled ?? element.getAttribute('aria-label') ?? element.textContent ?? '').trim();
      })()`)) as string;
      if (typeof name === 'string' ? focused === name : name.test(focused)) return;
    }
    throw new Error(`Tab never reached ${String(name)}`);
  }

  it('signs in and creates an application by keyboard only', { skip }, async () => {
    await page.goto(url('/console'));
    assert.equal(new URL(page.url()).pathname, '/console/sign-in');
    await checkPage('sign-in');
    await screenshot('sign-in');
    // The key field has the focus on arrival.
    await page.keyboard.type(console_.adminKey);
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/console\/applications$/);
    await checkPage('applications (empty)');

    await tabTo('New application');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/console\/applications\/new$/);
    await checkPage('new application');
    await tabTo('client_id');
    await page.keyboard.type('billing-web');
    await tabTo('Display name');
    await page.keyboard.type('Billing');
    await tabTo('Description');
    await page.keyboard.type('Invoices and payments');
    await tabTo('Access-token lifetime (minutes)');
    await page.keyboard.press('Control+A');
    await page.keyboard.type('30');
    await tabTo('Create application');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/console\/applications\/billing-web\?notice=created$/);
    assert.match(await page.locator('[role=status]').first().innerText(), /was created/);
    const api = await callServer(
      console_.server,
      console_.adminKey,
      'GET',
      '/applications/billing-web',
    );
    assert.equal(api.status, 200);
    assert.equal(api.body.jwt_expiration_in_minutes, 30);
    await checkPage('application');
  });

  it('shows the API’s field errors next to their fields', { skip }, async () => {
    await page.goto(url('/console/applications/billing-web'));
    await page.fill('#field-display_name', '   ');
    await page.fill('#field-external_token_validation', '{"google_oauth2": {"issuer": ');
    await page.click('text=Save changes');
    const error = page.locator('#field-external_token_validation-error');
    await error.waitFor();
    assert.match(await error.innerText(), /must be valid JSON/);
    assert.equal(
      await page.getAttribute('#field-external_token_validation', 'aria-describedby'),
      'field-external_token_validation-hint field-external_token_validation-error',
    );
    await page.fill('#field-external_token_validation', '[]');
    await page.click('text=Save changes');
    await page.locator('#field-display_name-error').waitFor();
    assert.match(
      await page.locator('#field-display_name-error').innerText(),
      /Display name must be/,
    );
    assert.match(
      await page.locator('#field-external_token_validation-error').innerText(),
      /must be an object or null/,
    );
    await checkPage('application with field errors');
    await screenshot('application-field-errors');
    const api = await callServer(
      console_.server,
      console_.adminKey,
      'GET',
      '/applications/billing-web',
    );
    assert.equal(api.body.display_name, 'Billing', 'nothing changed');
  });

  it('searches applications by client_id prefix as one types', { skip }, async () => {
    for (const clientId of ['billing-api', 'shop-web']) {
      await callServer(console_.server, console_.adminKey, 'POST', '/applications', {
        client_id: clientId,
        display_name: clientId,
        description: '',
      });
    }
    await page.goto(url('/console/applications'));
    await page.fill('#field-prefix', 'bill');
    await page.waitForURL(/prefix=bill/);
    await page.waitForFunction(`!document.body.innerText.includes('shop-web')`);
    const shown = await page.locator('#application-list tbody tr td:first-child').allInnerTexts();
    assert.deepEqual(shown, ['billing-api', 'billing-web']);
    await checkPage('applications (search)');
    await screenshot('applications');
  });

  it(
    'adds a user with roles as chips, changes them, and pages through users',
    { skip },
    async () => {
      for (let n = 0; n < 55; n++) {
        await callServer(
          console_.server,
          console_.adminKey,
          'POST',
          '/applications/billing-web/users',
          {
            provider: 'google_oauth2',
            identifier: `1${String(n).padStart(14, '0')}`,
            name: `Customer ${n}`,
            email: `customer${n}@example.com`,
            locale: 'en-GB',
            roles: n % 5 === 0 ? ['billing:approver'] : [],
            scopes: ['org:acme'],
          },
        );
      }
      await page.goto(url('/console/applications/billing-web'));
      await page.click('a:has-text("Users")');
      await page.waitForURL(/\/users$/);
      assert.equal(await page.locator('#user-list tbody tr').count(), 50);
      await checkPage('users', { light: 'users', narrow: 'users-mobile' });
      await page.click('a[rel=next]');
      await page.waitForURL(/after=/);
      assert.equal(await page.locator('#user-list tbody tr').count(), 5);

      await page.goto(url('/console/applications/billing-web/users/new'));
      await page.fill('#field-provider', 'azure_saml');
      await page.fill('#field-identifier', 'CN=Ada Lovelace,OU=R&D');
      await page.fill('#field-name', 'Ada Lovelace');
      await page.fill('#field-email', 'ada@example.com');
      await page.fill('#field-locale', 'en-GB');
      await page.fill('#field-roles_new', 'admin');
      await page.press('#field-roles_new', 'Enter');
      await page.fill('#field-roles_new', 'auditor');
      await page.press('#field-roles_new', 'Enter');
      assert.deepEqual(await page.locator('[data-chips=roles] label.chip').allInnerTexts(), [
        'admin',
        'auditor',
      ]);
      await page.fill('#field-scopes_new', 'org:acme');
      await page.click('text=Create user');
      await page.waitForURL(/notice=created/);
      await checkPage('user');

      // Untick one role, add another: roles are chips.
      await page.uncheck('[data-chips=roles] input[value=auditor]');
      await page.fill('#field-roles_new', 'billing:approver');
      await page.press('#field-roles_new', 'Enter');
      await page.click('text=Save changes');
      await page.waitForURL(/notice=saved/);
      // Its history, newest first, by the key's name.
      assert.deepEqual(await page.locator('#events tbody tr td:nth-child(2)').allInnerTexts(), [
        'user.updated',
        'user.created',
      ]);
      assert.deepEqual(
        await page.locator('#events tbody tr td:nth-child(3)').allInnerTexts(),
        ['bootstrap (IAM_BOOTSTRAP_API_KEY)', 'bootstrap (IAM_BOOTSTRAP_API_KEY)'],
        'by the name of the key signed in with',
      );
      await checkPage('user with history', { light: 'user' });
      await page.locator('#history-heading').scrollIntoViewIfNeeded();
      await screenshot('user-history');
      const user = await callServer(
        console_.server,
        console_.adminKey,
        'GET',
        `/applications/billing-web/users/azure_saml/${encodeURIComponent('CN=Ada Lovelace,OU=R&D')}`,
      );
      assert.deepEqual(user.body.roles, ['admin', 'billing:approver']);

      await page.click('text=Deactivate user');
      await page.waitForURL(/notice=deactivated/);
      assert.match(await page.locator('.meta').innerText(), /Inactive/);
    },
  );

  it(
    'edits the authorization, then asks "would this user be allowed?" in place',
    { skip },
    async () => {
      await page.goto(url('/console/applications/billing-web'));
      await page.fill(
        '#field-authorization',
        '{"actions": {"approve_invoice": {"roles": ["bad role"]}}}',
      );
      await page.click('button:has-text("Save authorization")');
      const error = page.locator('#field-authorization-error');
      await error.waitFor();
      assert.match(await error.innerText(), /at \/actions\/approve_invoice\/roles\/0: must be/);
      const model = { actions: { approve_invoice: { roles: ['billing:approver'] } } };
      await page.fill('#field-authorization', JSON.stringify(model, null, 2));
      await page.click('button:has-text("Save authorization")');
      await page.waitForURL(/notice=authorization-saved/);
      const api = await callServer(
        console_.server,
        console_.adminKey,
        'GET',
        '/applications/billing-web',
      );
      assert.deepEqual(api.body.authorization, model);

      const ask = async (subject: string) => {
        await page.fill('#field-subject', subject);
        await page.fill('#field-action', 'approve_invoice');
        await page.fill('#field-resource_type', 'invoice');
        await page.click('#decision-dry-run button:has-text("Ask")');
        // htmx swaps the section in place: the page stays where it is.
        const result = page.locator(
          `#decision-dry-run [role=status]:has-text("${subject.split(':')[1]}")`,
        );
        await result.waitFor();
        return result.innerText();
      };
      assert.match(
        await ask('google_oauth2:100000000000000'),
        /^Allowed: the user holds "billing:approver"/,
      );
      assert.match(
        await ask('google_oauth2:100000000000001'),
        /^Denied: the user holds none of the roles/,
      );
      assert.match(await ask('azure_saml:CN=Ada Lovelace,OU=R&D'), /^Denied: the user is inactive/);
      assert.match(new URL(page.url()).search, /notice=authorization-saved/, 'no navigation');
      await checkPage('application authorization and decision dry run');
      await page.locator('#decision-dry-run').scrollIntoViewIfNeeded();
      await screenshot('application-decision-dry-run');
    },
  );

  it('creates a key (secret shown once, copied), then revokes it', { skip }, async () => {
    await page.goto(url('/console/api-keys'));
    await checkPage('api keys');
    await page.fill('#field-name', 'billing back end');
    await page.check('#role-users-read');
    await page.check('#role-users-write');
    await page.fill('#field-applications', 'billing-web');
    await page.click('text=Create key');
    const secret = await page.locator('#secret').inputValue();
    assert.match(secret, /^tsr_/);
    await page.click('button[data-copy=secret]');
    await page.locator('[data-copied-for=secret]:has-text("Copied")').waitFor();
    assert.equal(await page.evaluate('navigator.clipboard.readText()'), secret);
    await checkPage('new key secret');
    await screenshot('api-key-created');
    const works = await callServer(
      console_.server,
      secret,
      'GET',
      '/applications/billing-web/users',
    );
    assert.equal(works.status, 200);

    await page.goto(url('/console/api-keys'));
    assert.equal(
      await page.locator(`text=${secret}`).count(),
      0,
      'the secret is never shown again',
    );
    await page.click('a[aria-label="Revoke key billing back end…"]');
    await page.waitForURL(/\/revoke$/);
    await checkPage('revoke key (confirmation)');
    await page.click('button:has-text("Revoke key billing back end")');
    await page.waitForURL(/notice=revoked/);
    const refused = await callServer(
      console_.server,
      secret,
      'GET',
      '/applications/billing-web/users',
    );
    assert.equal(refused.status, 401);
  });

  it('rotates a signing key', { skip }, async () => {
    await page.goto(url('/console/signing-keys'));
    const before = await page.locator('tbody tr').count();
    await page.click('text=Rotate: add a new key');
    await page.waitForURL(/notice=signing-rotated/);
    assert.equal(await page.locator('tbody tr').count(), before + 1);
    await checkPage('signing keys');
    await screenshot('signing-keys');
  });

  it(
    'shows the events newest first, new ones on top as they happen, each in full',
    { skip },
    async () => {
      await page.goto(url('/console/events?client_id=billing-web&type=application.*,user.updated'));
      const types = () => page.locator('#events tbody tr td:nth-child(2)').allInnerTexts();
      const ids = async () =>
        (await page.evaluate(
          `[...document.querySelectorAll('#events tbody tr td:first-child a')].map((link) => link.getAttribute('href'))`,
        )) as string[];
      assert.deepEqual(await ids(), [...(await ids())].sort().reverse(), 'newest first');
      assert.ok((await types()).includes('user.updated'));
      assert.equal((await types()).at(-1), 'application.created', 'the oldest last');
      await checkPage('events');
      // A change made elsewhere (the API) appears on top without reloading the page.
      await callServer(console_.server, console_.adminKey, 'PATCH', '/applications/billing-web', {
        description: 'Invoices, payments and refunds',
      });
      await page.locator('tbody.new-events td:has-text("application.updated")').waitFor();
      assert.equal((await types())[0], 'application.updated');
      await checkPage('events (live)', { light: 'events', dark: 'events-dark' });
      await page.click('#events tbody tr:first-child td:first-child a');
      await page.waitForURL(/\/console\/events\/\d+$/);
      assert.equal(await page.locator('h1').innerText(), 'application.updated');
      assert.match(
        await page.locator('#changes').innerText(),
        /description\s+"Invoices and payments"\s+"Invoices, payments and refunds"/,
      );
      await checkPage('event', { light: 'event', narrow: 'event-mobile' });
      await page.click('dd a:has-text("billing-web")');
      await page.waitForURL(/\/console\/applications\/billing-web$/);
    },
  );

  it('creates webhooks (secret shown once); the list shows which one fails', { skip }, async () => {
    receiver = createServer((_request, response) => {
      response.statusCode = 204;
      response.end();
    });
    await new Promise<void>((ready) => receiver!.listen(0, '127.0.0.1', ready));
    const live = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/tessera`;
    const closed = createServer();
    await new Promise<void>((ready) => closed.listen(0, '127.0.0.1', ready));
    const dead = `http://127.0.0.1:${(closed.address() as { port: number }).port}/gone`;
    await new Promise((done) => closed.close(done));

    await page.goto(url('/console/webhooks'));
    await checkPage('webhooks (none)');
    await page.fill('#field-url', live);
    await page.fill('#field-event_types', 'user.*');
    await page.fill('#field-description', 'Billing sync');
    await page.click('text=Create webhook');
    const secret = await page.inputValue('#secret');
    assert.match(secret, /^whsec_/);
    await checkPage('webhook created');
    await page.click('text=To the webhook and its deliveries');
    await page.locator('h2:has-text("Deliveries")').waitFor();
    // The secret is not shown again.
    assert.equal(await page.locator('#secret').count(), 0);
    await checkPage('webhook');
    await callServer(console_.server, console_.adminKey, 'POST', '/webhooks', {
      url: dead,
      event_types: ['user.*'],
      description: 'Old CRM (switched off)',
    });
    await callServer(
      console_.server,
      console_.adminKey,
      'PATCH',
      '/applications/billing-web/users/google_oauth2/100000000000000',
      {
        roles: ['billing:approver', 'auditor'],
      },
    );
    await page.goto(url('/console/webhooks'));
    const health = page.locator('#webhook-list tbody tr td:nth-child(4)');
    for (let tries = 0; ; tries++) {
      const shown = await health.allInnerTexts();
      if (shown.some((text) => /failing since/.test(text)) && shown.includes('delivering')) break;
      assert.ok(tries < 100, `no health shown: ${shown.join(', ')}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
      await page.reload();
    }
    await checkPage('webhooks (health)', { light: 'webhooks' });
  });

  it(
    'imports users: a dry run first with its error lines, then the import of the same file',
    { skip },
    async () => {
      const count = async () =>
        (
          await callServer(
            console_.server,
            console_.adminKey,
            'GET',
            '/applications/billing-web/users?include_total=true&limit=1',
          )
        ).body.total as number;
      const before = await count();
      await page.goto(url('/console/applications/billing-web/users'));
      await page.click('a:has-text("Import users")');
      await page.waitForURL(/\/users\/import$/);
      await checkPage('import form');
      await page.selectOption('#field-format', 'auth0');
      await page.selectOption('#field-on_conflict', 'skip');
      await page.setInputFiles('#field-file', resolve('test/fixtures/imports/auth0-users.ndjson'));
      await page.click('button:has-text("Check the file (dry run)")');
      await page.waitForURL(/\/users\/imports\/[^/?]+$/);
      // Followed until it finishes: then the confirmation appears in place.
      await page.locator('button:has-text("Import the users")').waitFor();
      assert.equal(await page.locator('h1').innerText(), 'Dry run of an import auth0 file');
      const lines = await page
        .locator('table.import-errors tbody tr td:first-child')
        .allInnerTexts();
      assert.ok(lines.length > 0, 'the fixture has invalid lines');
      assert.deepEqual(
        lines,
        [...lines].sort((a, b) => Number(a) - Number(b)),
        'in line order',
      );
      assert.equal(await count(), before, 'a dry run writes nothing');
      await checkPage('import dry run', { light: 'import-dry-run' });

      await page.click('button:has-text("Import the users")');
      await page.waitForURL(/notice=started/);
      await page.locator('.badge.state-succeeded').waitFor();
      assert.equal(await page.locator('h1').innerText(), 'Import auth0 file');
      const created = Number(await page.locator('dt:has-text("Users created") + dd').innerText());
      assert.ok(created > 0);
      assert.equal(await count(), before + created);
      await checkPage('import finished');
    },
  );

  it('follows a long import as it runs, and cancels it', { skip }, async () => {
    // Enough lines to be running for a while on any machine: a dry run, so nothing is kept.
    const directory = mkdtempSync(join(tmpdir(), 'tessera-browser-import-'));
    const file = join(directory, 'many.ndjson');
    const lines: string[] = [];
    for (let n = 0; n < 400_000; n++) {
      lines.push(
        JSON.stringify({
          provider: 'google_oauth2',
          identifier: `9${String(n).padStart(14, '0')}`,
          name: `Bulk ${n}`,
          email: n % 1000 === 7 ? 'not an e-mail' : `bulk${n}@example.com`,
          locale: 'en',
          roles: [],
          scopes: [],
        }),
      );
    }
    writeFileSync(file, `${lines.join('\n')}\n`);
    try {
      await page.goto(url('/console/applications/billing-web/users/import'));
      await page.setInputFiles('#field-file', file);
      await page.click('button:has-text("Check the file (dry run)")');
      await page.waitForURL(/\/users\/imports\/[^/?]+$/);
      await page.locator('.badge.state-running').waitFor();
      const read = page.locator('dt:has-text("Lines read") + dd');
      const first = Number((await read.innerText()).replaceAll(',', ''));
      // The page asks for its progress by itself: the count grows without a reload.
      for (let waited = 0; ; waited += 200) {
        const now = Number((await read.innerText()).replaceAll(',', ''));
        if (now > first) break;
        assert.ok(waited < 60_000, `the count stayed at ${first}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      // Quickly, while it runs: the three ways of checkPage take longer than some machines' run.
      await axe('import running (1280 px, light)', page);
      await screenshot('import-running');
      await page.click('button:has-text("Cancel the dry run")');
      await page.waitForURL(/notice=cancelled/);
      await page.locator('.badge.state-cancelled').waitFor();
      assert.equal(await page.locator('button:has-text("Import the users")').count(), 0);
      await checkPage('import cancelled');
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('lands a key of one application’s users on those users, on a phone', { skip }, async () => {
    const created = await callServer(console_.server, console_.adminKey, 'POST', '/api-keys', {
      name: 'shop support',
      roles: ['users:read', 'users:write'],
      applications: ['billing-web'],
    });
    assert.equal(created.status, 201);
    const phone = await browser.newContext({ viewport: NARROW, colorScheme: 'dark' });
    try {
      const small = await phone.newPage();
      await small.goto(url('/console/sign-in'));
      await small.fill('#field-key', String(created.body.key));
      await small.press('#field-key', 'Enter');
      await small.waitForURL(/\/console\/applications\/billing-web\/users$/);
      assert.deepEqual(await small.locator('header nav a').allInnerTexts(), ['Users']);
      await small.setViewportSize(WIDE);
      await checkPage('users (restricted key)', {}, small);
      await checkScheme('users (restricted key)', small, 'dark');
      await small.setViewportSize(NARROW);
      await screenshot('users-restricted-key-mobile-dark', small);
    } finally {
      await phone.close();
    }
  });

  it('refuses a cross-site form post without the CSRF token', { skip }, async () => {
    // Another port of the same host: the same site, so the cookie goes along; the token does not.
    attacker = createServer((_request, response) => {
      response.setHeader('content-type', 'text/html');
      response.end(`<form method="post" action="${url('/console/applications')}">
<input name="client_id" value="planted"><input name="display_name" value="Planted">
<input name="description" value=""></form><script>document.forms[0].submit()</script>`);
    });
    await new Promise<void>((ready) => attacker!.listen(0, '127.0.0.1', ready));
    attackerOrigin = `http://127.0.0.1:${(attacker.address() as { port: number }).port}`;
    const answer = page.waitForResponse((response) =>
      response.url().endsWith('/console/applications'),
    );
    await page.goto(attackerOrigin);
    assert.equal((await answer).status(), 403);
    const planted = await callServer(
      console_.server,
      console_.adminKey,
      'GET',
      '/applications/planted',
    );
    assert.equal(planted.status, 404);
  });

  it('signs out: the session is over', { skip }, async () => {
    await page.goto(url('/console/applications'));
    await page.click('text=Sign out');
    await page.waitForURL(/sign-in\?signed-out=1/);
    await page.goto(url('/console/applications'));
    assert.equal(new URL(page.url()).pathname, '/console/sign-in');
  });

  it('ends an idle session', { skip }, async () => {
    const short = await startConsoleServer({ IAM_CONSOLE_IDLE_TIMEOUT_SECONDS: '2' });
    serverHosts.add(new URL(short.server.baseUrl).host);
    try {
      const idle = await context.newPage();
      await idle.goto(`${short.server.baseUrl}/console/sign-in`);
      await idle.fill('#field-key', short.adminKey);
      await idle.press('#field-key', 'Enter');
      await idle.waitForURL(/\/console\/applications$/);
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      await idle.reload();
      assert.equal(new URL(idle.url()).pathname, '/console/sign-in');
      assert.match(await idle.locator('[role=status]').innerText(), /session has ended/);
      await idle.close();
    } finally {
      await short.stop();
    }
  });

  it('sent every response with the CSP and asked no other host for anything', { skip }, () => {
    assert.deepEqual(withoutCsp, []);
    assert.deepEqual(foreignRequests, []);
    assert.deepEqual(cspViolations, []);
  });
});
