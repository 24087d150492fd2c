// Console sign-in through an OpenID provider in a real browser: Debian's chromium driven by
// playwright-core, against Tessera started as `npm start` runs it with IAM_CONSOLE_OIDC_* set,
// and a real provider (oidc-provider) on another site (localhost, where Tessera is 127.0.0.1).
// It shows what fetch cannot: the browser comes back from the provider's site, and the
// session's SameSite=Strict cookie still works on the console's next page. axe-core checks
// the sign-in page and the failure page in the light and the dark colour scheme.
//
// Needs chromium (`apt-get install chromium`, or CHROMIUM_PATH); TESSERA_BROWSER_TESTS=skip
// skips it with the reason printed. TESSERA_SCREENSHOTS (a directory) receives screenshots.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { AxeBuilder } from '@axe-core/playwright';
import { type Browser, type Page, chromium } from 'playwright-core';
import { type TestProvider, startTestProvider } from './oidc-provider.js';
import { skipUnless } from './required-service.js';
import { type ServerProcess, freePort, startServerProcess } from './server-process.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SCREENSHOTS = process.env.TESSERA_SCREENSHOTS;
const CLIENT_ID = 'tessera-console';
const CLIENT_SECRET = randomBytes(24).toString('base64url');

function whyNotRun(): string | false {
  if (process.env.TESSERA_BROWSER_TESTS === 'skip') {
    const reason = 'browser tests skipped: TESSERA_BROWSER_TESTS=skip';
    process.stdout.write(`# ${reason}\n`);
    return reason;
  }
  return skipUnless(
    'browser (chromium)',
    existsSync(CHROMIUM) ? undefined : `no chromium at ${CHROMIUM}`,
  );
}

describe('console sign-in through an OpenID provider, in Chromium', { timeout: 180_000 }, () => {
  const skip = whyNotRun();
  let provider: TestProvider;
  let server: ServerProcess;
  let browser: Browser;
  let dataDir: string;

  before(async () => {
    if (skip !== false) return;
    const providerPort = await freePort();
    dataDir = mkdtempSync(join(tmpdir(), 'tessera-oidc-browser-'));
    server = await startServerProcess(process.execPath, ['dist/main.js'], {
      DATABASE_URL: `sqlite:${join(dataDir, 'tessera.db')}`,
      IAM_DATA_DIR: dataDir,
      IAM_CONSOLE_OIDC_ISSUER: `http://localhost:${providerPort}`,
      IAM_CONSOLE_OIDC_CLIENT_ID: CLIENT_ID,
      IAM_CONSOLE_OIDC_CLIENT_SECRET: CLIENT_SECRET,
      IAM_CONSOLE_OIDC_NAME: 'Example SSO',
      IAM_CONSOLE_OIDC_ROLES_CLAIM: 'groups',
      IAM_CONSOLE_OIDC_ROLE_MAP: 'tessera-admins=*;support=users:read,users:write',
    });
    provider = await startTestProvider({
      port: providerPort,
      hostname: 'localhost',
      webClients: [
        {
          clientId: CLIENT_ID,
          clientSecret: CLIENT_SECRET,
          redirectUri: `${server.baseUrl}/console/oidc/callback`,
        },
      ],
    });
    provider.accounts.set('ada', {
      sub: 'sub-ada',
      name: 'Ada Lovelace',
      groups: ['tessera-admins'],
    });
    provider.accounts.set('eve', { sub: 'sub-eve', name: 'Eve', groups: ['visitors'] });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  });

  after(async () => {
    if (skip !== false) return;
    await browser?.close();
    await server?.stop();
    await provider?.close();
    rmSync(dataDir, { recursive: true, force: true });
    assert.ok(!server.output().includes(CLIENT_SECRET), 'the client secret appears in the log');
  });

  async function newPage(colorScheme: 'light' | 'dark' = 'light'): Promise<Page> {
    const context = await browser.newContext({
      viewport: { width: 1280, height: 860 },
      colorScheme,
    });
    return context.newPage();
  }

  /** axe-core on the page: no serious or critical violation. */
  async function assertAccessible(page: Page, name: string): Promise<void> {
    const { violations } = await new AxeBuilder({ page }).analyze();
    const grave = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    assert.deepEqual(
      grave.map((v) => `${v.id}: ${v.nodes.length}`),
      [],
      `axe on ${name}`,
    );
  }

  async function screenshot(page: Page, name: string): Promise<void> {
    if (SCREENSHOTS === undefined) return;
    mkdirSync(resolve(SCREENSHOTS), { recursive: true });
    await page.screenshot({ path: resolve(SCREENSHOTS, `${name}.png`), fullPage: true });
  }

  it(
    'signs in through the provider on another site and lands in the console, signed in',
    { skip },
    async () => {
      const page = await newPage();
      await page.goto(`${server.baseUrl}/console/sign-in`);
      await assertAccessible(page, 'sign-in with a provider');
      await screenshot(page, 'sign-in-with-provider');
      provider.nextAccount = 'ada';
      provider.loginForm = true;
      await page.getByRole('link', { name: 'Sign in with Example SSO' }).click();
      // The provider's page: the click there begins the navigation that comes back (cross-site).
      await page.getByRole('button', { name: 'Continue as ada' }).click();
      provider.loginForm = false;
      // The provider's site, then the callback, then the console's own refresh to its first page.
      await page.waitForURL(`${server.baseUrl}/console/applications`);
      await assert.doesNotReject(
        page.getByText('Signed in as').waitFor(),
        'the console page is shown signed in',
      );
      assert.equal(await page.locator('.who strong').textContent(), 'Ada Lovelace');
      const cookies = await page
        .context()
        .cookies([`${server.baseUrl}/console/`, `${server.baseUrl}/console/oidc/callback`]);
      const session = cookies.find((cookie) => cookie.name === 'tessera_console')!;
      assert.equal(session.httpOnly, true);
      assert.equal(session.sameSite, 'Strict');
      assert.equal(
        cookies.find((cookie) => cookie.name === 'tessera_console_oidc'),
        undefined,
        'the sign-in cookie is spent',
      );
      // Every page the mapped roles (all of them) open is reachable.
      await page.getByRole('link', { name: 'API keys' }).click();
      await page.waitForURL(`${server.baseUrl}/console/api-keys`);
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.waitForURL(/\/console\/sign-in\?signed-out=1$/);
      await page.context().close();
    },
  );

  for (const colorScheme of ['light', 'dark'] as const) {
    it(`explains a refused sign-in on an accessible page (${colorScheme})`, { skip }, async () => {
      const page = await newPage(colorScheme);
      await page.goto(`${server.baseUrl}/console/sign-in`);
      provider.nextAccount = 'eve';
      await page.getByRole('link', { name: 'Sign in with Example SSO' }).click();
      await page.getByRole('heading', { name: 'Sign-in failed' }).waitFor();
      assert.match(
        (await page.getByRole('alert').textContent()) ?? '',
        /carries no Tessera role in its "groups" claim/,
      );
      await assertAccessible(page, `sign-in failed (${colorScheme})`);
      if (colorScheme === 'light') await screenshot(page, 'sign-in-failed');
      await page.goto(`${server.baseUrl}/console`);
      await page.waitForURL(`${server.baseUrl}/console/sign-in`);
      await page.context().close();
    });
  }
});
