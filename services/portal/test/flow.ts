// The portal end to end in a real browser (Debian's Chromium, driven by playwright-core; no browser
// is ever downloaded): a running deployment, a portal URL from the API, then everything through the
// pages: create a webhook destination, see the attempts of published events, attempt detail, retry,
// rotate the secret, disable and enable, delete; the expired-session page. With `screenshots`, the
// main pages are captured in both themes and at phone width (into docs/portal/ with
// PORTAL_SCREENSHOTS=1).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { type Browser, chromium, type Locator, type Page } from 'playwright-core';
import type { Test } from 'tap';
import { e2eMode, ROOT, type Stack, startReceiver, startStack, waitFor } from '@switchyard/shared/testing/index.ts';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
// The screenshots go to docs/portal/ only when asked (PORTAL_SCREENSHOTS=1): a test run leaves the
// tree as it found it.
const SHOTS =
  process.env.PORTAL_SCREENSHOTS === '1' ? join(ROOT, 'docs/portal') : join(process.env.SWITCHYARD_TEST_RUN ?? tmpdir(), 'portal-shots');

type T = Test;

type Api = Stack['api'];

/** Builds the portal when its sources changed (a lock keeps parallel test files from racing). */
export function buildPortal(): void {
  execFileSync('bash', [join(ROOT, 'infra/portal.sh')], { stdio: 'inherit' });
}

export async function launch(t: T): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium is not installed at ${CHROMIUM} (apt-get install chromium; .ci/run does)`);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-dev-shm-usage'],
    timeout: 30_000,
  });
  t.teardown(() => browser.close());
  return browser;
}

/** The deployment, in the mode SWITCHYARD_E2E_MODE names: embedded (one process) or every service its own process. */
export async function deploy(t: T, extra: Record<string, string> = {}) {
  const receiver = await startReceiver(t);
  const stack = await startStack(t, {
    TOPICS: 'user.created,order.paid',
    RETRY_MAX_LIMIT: '0',
    PORTAL_ORGANIZATION_NAME: 'Acme Cloud',
    PORTAL_REFERER_URL: `${receiver.url}/back`,
    ...extra,
  });
  // In embedded mode the four are the one process.
  const processes = [...new Set([stack.attempts, stack.router, stack.sender, stack.gateway])];
  return { base: stack.base, admin: stack.api, receiver, env: stack.env, output: () => processes.map((p) => p.output()).join('\n') };
}

export async function portalUrl(admin: Api, tenant: string, theme: 'light' | 'dark'): Promise<string> {
  const r = await admin<{ redirect_url: string }>('GET', `/api/v1/tenants/${tenant}/portal?theme=${theme}`);
  if (r.status !== 200) throw new Error(`portal URL: ${r.status}`);
  return r.body.redirect_url;
}

/** Clicks Refresh until the activity chart counts the 1,025 attempts of the flow, one failed. */
async function chartCounts(page: Page, what: string): Promise<void> {
  await waitFor(
    what,
    async () => {
      await page.getByRole('button', { name: 'Refresh' }).click();
      await page.waitForTimeout(400);
      return /1025 attempts, 1 failed/.test((await page.locator('#activity-title').textContent()) ?? '');
    },
    60_000,
  );
}

/** Clicks Refresh until the deliveries table has at least `n` rows (listings trail deliveries a little). */
async function rowsAtLeast(page: Page, n: number, selector = 'table.attempts tbody tr'): Promise<number> {
  return waitFor(
    `${n} rows in ${selector}`,
    async () => {
      await page.getByRole('button', { name: 'Refresh' }).click();
      await page.waitForTimeout(400);
      const count = await page.locator(selector).count();
      return count >= n ? count : undefined;
    },
    30_000,
  );
}

/** Waits for the locator to be visible (false after the timeout): pages render after their data arrives. */
/**
 * The failed attempt's link, by its label ("Attempt 1 of event <id>: 503"): a row's text also holds
 * the event id, which may contain 503 itself.
 */
const ATTEMPT_503 = /: 503$/;

const visible = (l: Locator) =>
  l.waitFor({ timeout: 10_000 }).then(
    () => true,
    () => false,
  );

async function shot(page: Page, name: string, on: boolean): Promise<void> {
  if (!on) return;
  mkdirSync(SHOTS, { recursive: true });
  // Relative times and the notice differ run to run; the notice is hidden for stable pictures.
  await page.evaluate("document.querySelector('.notice')?.classList.remove('shown'); window.scrollTo(0, 0)");
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true, animations: 'disabled' });
}

/**
 * The wizard's configuration step of every type fits the window at desktop (1280 px) and phone
 * (390 px) width: the type's instructions (code blocks included) wrap or scroll inside their panel,
 * never widening the page. The numbered steps stay one list, code blocks inside their step.
 */
async function wizardFits(t: T, browser: Browser, admin: Api, base: string): Promise<void> {
  const types = await admin<Array<{ type: string; label: string; instructions: string }>>('GET', '/api/v1/destination-types');
  t.equal(types.status, 200);
  for (const viewport of [
    { width: 1280, height: 800 },
    { width: 390, height: 844 },
  ]) {
    const context = await browser.newContext({ viewport, isMobile: viewport.width < 600, hasTouch: viewport.width < 600 });
    context.setDefaultTimeout(15_000);
    const page = await context.newPage();
    await page.goto(await portalUrl(admin, 'acme', 'light'));
    await page.getByRole('link', { name: 'New destination' }).waitFor();
    for (const ty of types.body) {
      await page.goto(`${base}/portal/new`);
      await page
        .locator('label.type-card')
        .filter({ has: page.getByText(ty.label, { exact: true }) })
        .click();
      await page.getByRole('button', { name: 'Next' }).click();
      await page.getByRole('button', { name: 'Next' }).click();
      await page.locator('.instructions h1').waitFor();
      const width = (await page.evaluate('document.documentElement.scrollWidth')) as number;
      t.ok(width <= viewport.width, `${ty.type} at ${viewport.width} px: the configuration step is ${width} px wide`);
      if (/^\d+\. /m.test(ty.instructions))
        t.equal(await page.locator('.instructions ol').count(), 1, `${ty.type}: the numbered steps are one list`);
      if (ty.instructions.includes('```'))
        t.equal(
          await page.locator('.instructions pre').count(),
          await page.locator('.instructions ol li pre').count(),
          `${ty.type}: its code blocks sit inside their step`,
        );
    }
    await context.close();
  }
}

export interface FlowOptions {
  screenshots: boolean;
  /** PORTAL_* settings to start with, checked on the first page. */
  branding?: { brandColor: string; forceTheme: 'dark'; logo: true };
}

export async function portalFlow(t: T, opts: FlowOptions): Promise<void> {
  buildPortal();
  const b = opts.branding;
  const { base, admin, receiver, env, output } = await deploy(
    t,
    b ? { PORTAL_BRAND_COLOR: b.brandColor, PORTAL_FORCE_THEME: b.forceTheme, PORTAL_LOGO: '/portal/favicon.svg' } : {},
  );
  const browser = await launch(t);
  // The receiver: the first delivery fails (503), later ones succeed.
  let served = 0;
  receiver.respond(() =>
    ++served === 1
      ? { status: 503, body: 'temporarily unavailable' }
      : { status: 200, body: '{"received":true}', headers: { 'content-type': 'application/json' } },
  );

  t.equal((await admin('PUT', '/api/v1/tenants/acme')).status, 201, 'tenant created');
  const url = await portalUrl(admin, 'acme', 'light');
  const token = new URL(url).searchParams.get('token') as string;
  const context = await browser.newContext({ viewport: { width: 1200, height: 820 }, colorScheme: 'light' });
  context.setDefaultTimeout(15_000);
  const page = await context.newPage();
  const consoleText: string[] = [];
  page.on('console', (m) => consoleText.push(m.text()));
  const pageErrors: string[] = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));

  // The token becomes the session and leaves the address bar.
  await page.goto(url);
  await page
    .getByRole('heading', { name: 'Event destinations' })
    .waitFor()
    .catch(async (err: Error) => {
      throw new Error(
        `${err.message}\nconsole: ${consoleText.join('\n')}\nerrors: ${pageErrors.join('\n')}\nbody: ${await page.content()}`,
      );
    });
  t.notMatch(page.url(), /token=/, 'the token is removed from the address bar');
  t.equal(await page.evaluate("sessionStorage.getItem('switchyard.portal.token')"), token, 'the token is the session');
  if (b) {
    t.equal(await page.evaluate('document.documentElement.dataset.theme'), 'dark', 'PORTAL_FORCE_THEME wins over theme=light');
    t.equal(await page.getByRole('button', { name: /Switch to/ }).count(), 0, 'no theme toggle when the theme is forced');
    t.equal(
      await page.evaluate("getComputedStyle(document.documentElement).getPropertyValue('--brand').trim()"),
      b.brandColor,
      'the brand colour',
    );
    t.match(await page.locator('header img.logo').getAttribute('src'), /\/portal\/favicon\.svg$/, 'the logo');
  } else {
    t.equal(await page.evaluate('document.documentElement.dataset.theme'), 'light', 'theme=light');
    await page.getByRole('button', { name: 'Switch to dark theme' }).click();
    t.equal(await page.evaluate('document.documentElement.dataset.theme'), 'dark', 'the toggle switches the theme');
    await page.getByRole('button', { name: 'Switch to light theme' }).click();
  }
  t.ok(await visible(page.getByText('No destinations yet')), 'empty state');
  t.equal(await page.title(), 'Acme Cloud · Event destinations', 'the organisation names the page');
  // The same built pages in both modes: checked once, in embedded mode.
  if (e2eMode() === 'embedded') await wizardFits(t, browser, admin, base);

  // Create: type -> topics -> fields from the type schema, with its instructions.
  await page.getByRole('link', { name: 'New destination' }).click();
  await page.locator('label.type-card', { hasText: 'Webhook' }).click();
  await page.getByRole('button', { name: 'Next' }).click();
  await page.getByLabel('All topics, including ones added later').uncheck();
  await page.getByRole('button', { name: 'Next' }).click();
  t.ok(await visible(page.getByText('Choose at least one topic.')), 'a topic is required');
  await page.getByLabel('user.created').check();
  await page.getByLabel('order.paid').check();
  await page.getByRole('button', { name: 'Next' }).click();
  t.ok(await visible(page.locator('.instructions h1', { hasText: 'Webhook' })), 'the Markdown instructions are rendered');
  await page.getByRole('button', { name: 'Create destination' }).click();
  t.ok(await visible(page.getByText('URL is required')), 'a required field is checked before sending');
  await page.getByRole('textbox', { name: 'URL', exact: true }).fill('not a url');
  await page.getByRole('button', { name: 'Create destination' }).click();
  t.ok(await visible(page.getByText('URL is not in the expected format')), 'the field pattern is checked');
  await page.getByRole('textbox', { name: 'URL', exact: true }).fill(`${receiver.url}/hook`);
  await page.getByRole('button', { name: 'Add custom header' }).click();
  await page.getByLabel('Custom headers name 1').fill('x-team');
  await page.getByLabel('Custom headers value 1').fill('payments');
  await shot(page, 'new-destination-light', opts.screenshots);
  await page.getByRole('button', { name: 'Create destination' }).click();
  await page.getByRole('heading', { name: `${receiver.url}/hook` }).waitFor();
  const listed = await admin<Array<{ id: string; topics: string[]; config: Record<string, unknown>; credentials: { secret: string } }>>(
    'GET',
    '/api/v1/tenants/acme/destinations',
  );
  t.equal(listed.body.length, 1, 'one destination created through the portal');
  const dest = listed.body[0] as (typeof listed.body)[number];
  t.same(dest.topics, ['user.created', 'order.paid']);
  t.same(dest.config, { url: `${receiver.url}/hook`, custom_headers: { 'x-team': 'payments' } });
  t.match(dest.credentials.secret, /^whsec_/, 'a secret was generated');

  // Publish through the API; the attempts show up in the portal.
  for (const [topic, data] of [
    ['user.created', { id: 'u_1', name: 'Ada' }],
    ['order.paid', { id: 'o_1', amount: 4200 }],
    ['user.created', { id: 'u_2', name: 'Grace' }],
  ] as const) {
    const r = await admin('POST', '/api/v1/publish', { tenant_id: 'acme', topic, data });
    t.equal(r.status, 202, `published ${topic}`);
  }
  await waitFor('three deliveries', () => receiver.requests.length >= 3);
  t.equal(receiver.requests[0]?.headers['x-team'], 'payments', 'the custom header set in the portal is sent');
  await page.getByRole('link', { name: 'Deliveries' }).click();
  t.equal(await rowsAtLeast(page, 3), 3, 'three attempts listed');
  await page.locator('.chart-box svg').first().waitFor();
  t.ok(await visible(page.getByText('3 attempts, 1 failed')), 'the activity chart counts them');

  // Filters: failed only, then a topic.
  await page.getByLabel('Status').selectOption('failed');
  await waitFor('the failed filter', async () => (await page.locator('table.attempts tbody tr').count()) === 1);
  await page.getByLabel('Status').selectOption('');
  await page.getByLabel('Topic').selectOption('order.paid');
  await waitFor('the topic filter', async () => (await page.locator('table.attempts tbody tr').count()) === 1);
  t.ok(await visible(page.locator('table.attempts tbody tr', { hasText: 'order.paid' })), 'the topic filter keeps order.paid');
  await page.getByLabel('Topic').selectOption('');
  await waitFor('all rows back', async () => (await page.locator('table.attempts tbody tr').count()) === 3);
  await page.getByRole('button', { name: 'Events' }).click();
  await waitFor('the events view', async () => (await page.locator('table.events tbody tr').count()) === 3);
  await page.getByRole('button', { name: 'Attempts' }).click();
  await page.locator('table.attempts tbody tr').first().waitFor();
  await shot(page, 'deliveries-light', opts.screenshots);

  // Attempt detail of the failed one: request, response status and body; then retry it.
  await page.locator('table.attempts').getByRole('link', { name: ATTEMPT_503 }).click();
  await page.getByRole('heading', { name: /Attempt #1/ }).waitFor();
  t.equal(await page.getByTestId('response-status').textContent(), '503', 'response status');
  t.equal(await page.getByTestId('response-body').textContent(), 'temporarily unavailable', 'response body');
  t.same(JSON.parse((await page.getByTestId('request-body').textContent()) ?? ''), { id: 'u_1', name: 'Ada' }, 'request body');
  await shot(page, 'attempt-light', opts.screenshots);
  await page.getByRole('button', { name: 'Retry' }).click();
  await page.getByText('Retry queued').waitFor();
  await waitFor('the retried delivery', () => receiver.requests.length >= 4);
  t.same(JSON.parse(receiver.requests[3]?.body ?? '{}'), { id: 'u_1', name: 'Ada' }, 'the retry delivers the same event');
  await page.getByRole('link', { name: `${receiver.url}/hook` }).click();
  t.equal(await rowsAtLeast(page, 4), 4, 'the manual attempt is listed');
  t.ok(await visible(page.locator('table.attempts tbody tr', { hasText: 'manual' }).first()), 'marked manual');
  t.ok(await page.getByRole('button', { name: 'Older →' }).isDisabled(), 'one page of 20');

  // Rotate the secret: the double-signing window is shown.
  await page.getByRole('link', { name: 'Settings' }).click();
  await page.getByRole('button', { name: 'Rotate secret' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Rotate secret' }).click();
  await page.getByTestId('double-signing').waitFor();
  const rotated = await admin<{ credentials: Record<string, string> }>('GET', `/api/v1/tenants/acme/destinations/${dest.id}`);
  t.equal(rotated.body.credentials.previous_secret, dest.credentials.secret, 'the old secret still signs');
  t.ok(rotated.body.credentials.secret !== dest.credentials.secret, 'a new secret');
  t.match(await page.getByTestId('double-signing').textContent(), /Double signing until/);

  // Filter and delivery metadata.
  await page.getByLabel('Filter (JSON)').fill('{"data": {"amount": {"$gte": 100}}}');
  await page.getByRole('button', { name: 'Save filter' }).click();
  await page.getByText('Filter saved.').waitFor();
  await page.getByRole('button', { name: 'Add metadata' }).click();
  await page.getByLabel('Metadata name 1').fill('source');
  await page.getByLabel('Metadata value 1').fill('portal');
  await page.getByRole('button', { name: 'Save metadata' }).click();
  await page.getByText('Delivery metadata saved.').waitFor();
  const edited = await admin<{ filter: unknown; delivery_metadata: unknown }>('GET', `/api/v1/tenants/acme/destinations/${dest.id}`);
  t.same(edited.body.filter, { data: { amount: { $gte: 100 } } }, 'filter saved');
  t.same(edited.body.delivery_metadata, { source: 'portal' }, 'delivery metadata saved');
  // Rate limit: set, shown as stored after a reload, removed.
  await page.getByLabel('Deliveries per second').fill('0');
  await page.getByRole('button', { name: 'Save rate limit' }).click();
  await page.getByText('Enter whole numbers of at least 1').waitFor();
  await page.getByLabel('Deliveries per second').fill('25');
  await page.getByLabel('Deliveries per minute').fill('600');
  await page.getByRole('button', { name: 'Save rate limit' }).click();
  await page.getByText('Rate limit saved.').waitFor();
  const limited = await admin<{ rate_limit?: unknown }>('GET', `/api/v1/tenants/acme/destinations/${dest.id}`);
  t.same(limited.body.rate_limit, { per_second: 25, per_minute: 600 }, 'rate limit saved');
  await page.reload();
  t.equal(await page.getByLabel('Deliveries per second').inputValue(), '25', 'the stored limit is shown');
  await page.getByLabel('Deliveries per minute').fill('');
  await page.getByRole('button', { name: 'Save rate limit' }).click();
  await page.getByText('Rate limit saved.').waitFor();
  t.same(
    (await admin<{ rate_limit?: unknown }>('GET', `/api/v1/tenants/acme/destinations/${dest.id}`)).body.rate_limit,
    { per_second: 25 },
    'one limit removed from the form',
  );
  // Both boxes empty: no limit (the deliveries below go at full speed).
  await page.getByLabel('Deliveries per second').fill('');
  await page.getByRole('button', { name: 'Save rate limit' }).click();
  await page.getByText('Rate limit removed.').waitFor();
  t.notOk(
    'rate_limit' in (await admin<object>('GET', `/api/v1/tenants/acme/destinations/${dest.id}`)).body,
    'the limit removed from the form',
  );
  // Ordered delivery: switched on, shown with its (empty) block after a reload, switched off again.
  await page.getByLabel('Deliver in publish order').check();
  await page.getByRole('button', { name: 'Save delivery order' }).click();
  await page.getByText('Ordered delivery on.').waitFor();
  t.equal((await admin<{ ordered?: boolean }>('GET', `/api/v1/tenants/acme/destinations/${dest.id}`)).body.ordered, true, 'ordered saved');
  await page.reload();
  t.ok(await page.getByLabel('Deliver in publish order').isChecked(), 'the stored flag is shown');
  await page.getByText('Nothing is blocking this destination.').waitFor();
  await page.getByLabel('Deliver in publish order').uncheck();
  await page.getByRole('button', { name: 'Save delivery order' }).click();
  await page.getByText('Ordered delivery off.').waitFor();
  t.notOk('ordered' in (await admin<object>('GET', `/api/v1/tenants/acme/destinations/${dest.id}`)).body, 'ordered switched off');
  await shot(page, 'destination-light', opts.screenshots);

  // Disable, then enable again.
  await page.getByRole('button', { name: 'Disable' }).click();
  await page.getByRole('button', { name: 'Enable' }).waitFor();
  const disabled = await admin<{ disabled_at: string | null }>('GET', `/api/v1/tenants/acme/destinations/${dest.id}`);
  t.ok(disabled.body.disabled_at, 'disabled');
  await page.getByRole('button', { name: 'Enable' }).click();
  await page.getByRole('button', { name: 'Disable' }).waitFor();
  t.equal(
    (await admin<{ disabled_at: string | null }>('GET', `/api/v1/tenants/acme/destinations/${dest.id}`)).body.disabled_at,
    null,
    'enabled',
  );

  // The list: type, target, topics, status, last delivery.
  await page.getByRole('link', { name: 'Destinations', exact: true }).first().click();
  const row = page.locator('table.destinations tbody tr');
  await row.getByText('success').waitFor();
  t.match(await row.textContent(), /Webhook.*\/hook.*user\.created.*order\.paid.*enabled.*success/, 'list row');
  await shot(page, 'destinations-light', opts.screenshots);

  if (opts.screenshots) {
    // The same pages in the dark theme (a new portal URL with theme=dark), and at phone width.
    const dark = await browser.newContext({ viewport: { width: 1200, height: 820 }, colorScheme: 'light' });
    const p = await dark.newPage();
    await p.goto(await portalUrl(admin, 'acme', 'dark'));
    await p.locator('table.destinations tbody tr').getByText('success').waitFor();
    t.equal(await p.evaluate('document.documentElement.dataset.theme'), 'dark', 'theme=dark wins over the browser preference');
    await shot(p, 'destinations-dark', true);
    await p.getByRole('link', { name: `${receiver.url}/hook` }).click();
    await p.getByTestId('double-signing').waitFor();
    await shot(p, 'destination-dark', true);
    await p.getByRole('link', { name: 'Deliveries' }).click();
    await p.locator('table.attempts tbody tr').nth(3).waitFor();
    await p.locator('.chart-box svg').first().waitFor();
    await shot(p, 'deliveries-dark', true);
    await p.locator('table.attempts').getByRole('link', { name: ATTEMPT_503 }).click();
    await p.getByTestId('response-status').waitFor();
    await shot(p, 'attempt-dark', true);
    await p.getByRole('link', { name: 'Destinations', exact: true }).first().click();
    await p.getByRole('link', { name: 'New destination' }).click();
    await p.locator('label.type-card', { hasText: 'Webhook' }).click();
    await shot(p, 'new-destination-types-dark', true);
    await dark.close();

    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    const m = await phone.newPage();
    await m.goto(await portalUrl(admin, 'acme', 'light'));
    await m.locator('table.destinations tbody tr').getByText('success').waitFor();
    t.ok(await m.evaluate('document.documentElement.scrollWidth <= window.innerWidth + 1'), 'no horizontal scrolling at phone width');
    await shot(m, 'destinations-phone', true);
    await m.getByRole('link', { name: `${receiver.url}/hook` }).click();
    await m.getByRole('link', { name: 'Deliveries' }).click();
    await m.locator('table.attempts tbody tr').nth(3).waitFor();
    t.ok(await m.evaluate('document.documentElement.scrollWidth <= window.innerWidth + 1'), 'deliveries fit the phone width');
    await shot(m, 'deliveries-phone', true);
    await phone.close();
  }

  // Cursor paging, 20 a page: 21 more events (they pass the filter saved above) make 25 attempts.
  for (let i = 0; i < 21; i++) {
    const r = await admin('POST', '/api/v1/publish', {
      tenant_id: 'acme',
      topic: 'order.paid',
      data: { id: `o_${i + 2}`, amount: 100 + i },
    });
    if (r.status !== 202) throw new Error(`publish: ${r.status}`);
  }
  await waitFor('25 deliveries', () => receiver.requests.length >= 25);
  // Received is not yet stored: the pages below are read once every attempt is listed.
  await waitFor('25 attempts stored', async () => {
    const r = await admin('GET', `/api/v1/tenants/acme/destinations/${dest.id}/attempts?limit=100`);
    return ((r.body as { models?: unknown[] }).models?.length ?? 0) >= 25;
  });
  await page.getByRole('link', { name: `${receiver.url}/hook` }).click();
  await page.getByRole('link', { name: 'Deliveries' }).click();
  await waitFor(
    'the first page',
    async () => {
      await page.getByRole('button', { name: 'Refresh' }).click();
      await page.waitForTimeout(400);
      return (
        (await page.getByRole('button', { name: 'Older →' }).isEnabled()) && (await page.locator('table.attempts tbody tr').count()) === 20
      );
    },
    30_000,
  );
  const newest = page.locator('table.attempts tbody tr td[data-label="Event"] code').first();
  const firstPage = await newest.getAttribute('title');
  await page.getByRole('button', { name: 'Older →' }).click();
  await waitFor('the second page', async () => (await page.locator('table.attempts tbody tr').count()) === 5);
  t.ok(await visible(page.locator('table.attempts').getByRole('link', { name: ATTEMPT_503 })), 'the oldest attempt is on the second page');
  t.ok(await page.getByRole('button', { name: 'Older →' }).isDisabled(), 'no third page');
  await page.getByRole('button', { name: '← Newer' }).click();
  await waitFor('the first page again', async () => (await page.locator('table.attempts tbody tr').count()) === 20);
  t.equal(await newest.getAttribute('title'), firstPage, 'back to the same first page');

  // The activity chart counts every attempt of the 24 hours, not a page of them: 1,000 more events
  // (in one batch) make 1,025 attempts, as many as the receiver was sent.
  const batch = await admin<{ results: Array<{ status: number }> }>('POST', '/api/v1/publish/batch', {
    events: Array.from({ length: 1000 }, (_, i) => ({ tenant_id: 'acme', topic: 'order.paid', data: { id: `b_${i}`, amount: 500 } })),
  });
  t.equal(batch.status, 200, 'a batch of 1,000 events');
  t.equal(batch.body.results.filter((r) => r.status === 202).length, 1000, 'all accepted');
  await waitFor('1,025 deliveries', () => receiver.requests.length >= 1025, 120_000);
  t.equal(receiver.requests.length, 1025, '1,025 requests, the first answered 503');
  await chartCounts(page, 'the chart counting all 1,025 attempts');
  t.pass('the activity chart counts 1025 attempts, 1 failed');
  // A page left open across the hour keeps counting: this browser's clock starts a second before the
  // hour the attempts are in, so at first they are past the chart's 24 hours; once its clock passes
  // the hour, a refresh moves the window and counts them.
  const lateContext = await browser.newContext();
  const late = await lateContext.newPage();
  await late.clock.install({ time: Math.floor(Date.now() / 3_600_000) * 3_600_000 - 1000 });
  await late.goto(await portalUrl(admin, 'acme', 'light'));
  await late.getByRole('link', { name: `${receiver.url}/hook` }).click();
  await late.getByRole('link', { name: 'Deliveries' }).click();
  await late.locator('.chart-box svg').first().waitFor();
  await late.clock.fastForward(2000);
  await chartCounts(late, 'the chart of a page opened before the hour counting all 1,025 attempts after it');
  t.pass('a chart left open past the hour moves its window');
  await lateContext.close();
  await page.getByRole('link', { name: 'Destinations', exact: true }).first().click();

  // A scheduled event shows as scheduled, with when it is due.
  const scheduled = await admin<{ id: string }>('POST', '/api/v1/publish', {
    tenant_id: 'acme',
    topic: 'order.paid',
    destination_id: dest.id,
    data: { id: 'later', amount: 500 },
    delay_seconds: 3600,
  });
  t.equal(scheduled.status, 202, 'a scheduled event');
  await page.getByRole('link', { name: `${receiver.url}/hook` }).click();
  await page.getByRole('link', { name: 'Deliveries' }).click();
  await page.getByRole('button', { name: 'Events' }).click();
  await waitFor('the scheduled event listed', async () => {
    await page.getByRole('button', { name: 'Refresh' }).click();
    await page.waitForTimeout(400);
    return visible(page.locator('tr', { hasText: scheduled.body.id }).getByText('scheduled', { exact: true }));
  });
  t.match(await page.locator('tr', { hasText: scheduled.body.id }).textContent(), /due in/, 'with when it is due');
  await page.getByRole('link', { name: 'Destinations', exact: true }).first().click();

  // Keyboard: the skip link is the first stop and the main actions are reachable by Tab.
  await page.goto(`${base}/portal/`);
  await page.locator('table.destinations').waitFor();
  await page.keyboard.press('Tab');
  t.equal(await page.evaluate('document.activeElement?.textContent'), 'Skip to content', 'skip link first');

  // Delete, with confirmation.
  await page.getByRole('link', { name: `${receiver.url}/hook` }).click();
  await page.getByRole('button', { name: 'Delete' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
  t.equal((await admin('GET', `/api/v1/tenants/acme/destinations/${dest.id}`)).status, 200, 'cancel keeps it');
  await page.getByRole('button', { name: 'Delete' }).click();
  // Nothing asks for the deleted destination again (a 404 in the console): every request from the
  // delete on is watched until none is left in flight.
  const inFlight = new Set<unknown>();
  const notFound: string[] = [];
  page.on('request', (r) => inFlight.add(r));
  page.on('requestfinished', (r) => inFlight.delete(r));
  page.on('requestfailed', (r) => inFlight.delete(r));
  page.on('response', (r) => {
    if (r.status() === 404) notFound.push(`${r.request().method()} ${new URL(r.url()).pathname}`);
  });
  const consoleBefore = consoleText.length;
  await page.getByRole('dialog').getByRole('button', { name: 'Delete destination' }).click();
  await page.getByText('No destinations yet').waitFor();
  await waitFor('no request in flight after the delete', () => inFlight.size === 0, 30_000);
  t.same(notFound, [], 'no request after the delete answers 404');
  t.same(
    consoleText.slice(consoleBefore).filter((m) => /404|not found/i.test(m)),
    [],
    'no 404 in the console after the delete',
  );
  t.equal((await admin('GET', `/api/v1/tenants/acme/destinations/${dest.id}`)).status, 404, 'deleted');

  // An expired token: a clear message, then back to PORTAL_REFERER_URL.
  const expired = await new SignJWT({})
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer('switchyard')
    .setSubject('acme')
    .setIssuedAt(Math.floor(Date.now() / 1000) - 90_000)
    .setExpirationTime(Math.floor(Date.now() / 1000) - 3_600)
    .sign(new TextEncoder().encode(env.API_JWT_SECRET as string));
  const gone = await browser.newPage();
  await gone.goto(`${base}/portal/?token=${expired}`);
  await gone.getByRole('heading', { name: 'Your session has expired' }).waitFor();
  await shot(gone, 'expired-light', opts.screenshots);
  t.equal(await gone.getByRole('link', { name: 'Return to Acme Cloud' }).getAttribute('href'), `${receiver.url}/back`, 'return link');
  t.notMatch(gone.url(), /token=/, 'the expired token leaves the address bar too');
  await gone.waitForURL(`${receiver.url}/back`, { timeout: 10_000 });
  t.ok(
    receiver.requests.some((r) => r.url === '/back' && !r.headers.referer),
    'sent back, without a Referer',
  );

  // The token is never logged, in the browser or by the service.
  t.notOk(
    consoleText.some((m) => m.includes(token)),
    'the browser console never shows the token',
  );
  t.notOk(output().includes(token), 'the service never logs the token');
  t.same(pageErrors, [], 'no uncaught errors in the page');
}
