// The portal where end users slip or the world moves under it, in a real browser against embedded
// mode: a checkbox whose default is on, destination ids that look like file names, a page opened in
// a new tab, the type list failing to load, a clipboard the browser withholds, a disabled
// destination, an entry with no name, a refusal the form could not foresee, topics beside a
// wildcard, and the tenant deleted while the portal is open.
import t from 'tap';

process.env.SWITCHYARD_E2E_MODE = 'embedded';
const { buildPortal, deploy, launch, portalUrl } = await import('./flow.ts');
const { waitFor } = await import('@switchyard/shared/testing/index.ts');

type Dest = { id: string; config: Record<string, unknown>; disabled_at: string | null };

t.test('the portal at its edges, embedded mode', { timeout: 600_000 }, async (t) => {
  buildPortal();
  const { base, admin, receiver } = await deploy(t, { TOPICS: 'user.created,order.paid,audit.*' });
  const browser = await launch(t);
  t.equal((await admin('PUT', '/api/v1/tenants/edge')).status, 201);
  const context = await browser.newContext({ viewport: { width: 1200, height: 820 } });
  context.setDefaultTimeout(15_000);
  const page = await context.newPage();
  await page.goto(await portalUrl(admin, 'edge', 'light'));
  await page.getByRole('heading', { name: 'Event destinations' }).waitFor();
  const stored = async (id: string) => (await admin<Dest>('GET', `/api/v1/tenants/edge/destinations/${id}`)).body;

  t.test('a checkbox starts from its default, and unticked it is sent', async (t) => {
    await page.getByRole('link', { name: 'New destination' }).click();
    await page.locator('label.type-card', { hasText: 'Kafka' }).click();
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByRole('button', { name: 'Next' }).click();
    const tls = page.getByRole('checkbox', { name: 'TLS' });
    t.ok(await tls.isChecked(), 'TLS is on, as the sender would use it');
    await tls.uncheck();
    await page.getByRole('textbox', { name: 'Bootstrap brokers' }).fill('kafka.internal:9092');
    await page.getByRole('textbox', { name: 'Topic', exact: true }).fill('events');
    await page.getByRole('combobox', { name: 'SASL mechanism' }).selectOption('plain');
    await page.getByRole('textbox', { name: 'Username' }).fill('user');
    await page.getByRole('textbox', { name: 'Password' }).fill('secret-password');
    await page.getByRole('button', { name: 'Create destination' }).click();
    await page.getByRole('heading', { name: 'kafka.internal:9092 -> events' }).waitFor();
    const list = (await admin<Dest[]>('GET', '/api/v1/tenants/edge/destinations')).body;
    const kafka = list.find((d) => d.config.brokers === 'kafka.internal:9092') as Dest;
    t.equal(kafka.config.tls, false, 'plaintext as chosen, not the default');
    // One stored without tls (an API client that left it out) shows the default: on.
    const created = await admin<Dest>('POST', '/api/v1/tenants/edge/destinations', {
      type: 'kafka',
      topics: '*',
      config: { brokers: 'b:9092', topic: 't', sasl_mechanism: 'plain' },
      credentials: { username: 'u', password: 'p' },
    });
    await page.goto(`${base}/portal/destinations/${created.body.id}`);
    t.ok(await page.getByRole('checkbox', { name: 'TLS' }).isChecked(), 'absent reads as the default');
  });

  t.test('a destination id that ends like a file name reloads as a page, in a new tab too', async (t) => {
    for (const id of ['orders.v2', 'billing@acme.io']) {
      const r = await admin('POST', '/api/v1/tenants/edge/destinations', {
        id,
        type: 'webhook',
        topics: '*',
        config: { url: `${receiver.url}/${encodeURIComponent(id)}` },
      });
      t.equal(r.status, 201);
      await page.goto(`${base}/portal/destinations/${encodeURIComponent(id)}`);
      await page.getByRole('heading', { name: `${receiver.url}/${encodeURIComponent(id)}` }).waitFor();
    }
    // A tab opened on its own (Ctrl-click, a pasted address) takes the session of the open one.
    const tab = await context.newPage();
    await tab.goto(`${base}/portal/destinations/orders.v2/deliveries`);
    await tab.getByRole('heading', { name: `${receiver.url}/orders.v2` }).waitFor();
    t.pass('the new tab shows the destination');
    await tab.close();
    // In a browser with no portal tab open, the page says why and stays.
    const alone = await (await browser.newContext()).newPage();
    await alone.goto(`${base}/portal/destinations/orders.v2`);
    await alone.getByRole('heading', { name: 'No session' }).waitFor();
    t.equal(await alone.getByText(/Taking you back/).count(), 0, 'no countdown away from a page opened on its own');
    await alone.context().close();
  });

  t.test('the type list failing to load is said, and can be asked again', async (t) => {
    let refuse = true;
    await page.route('**/api/v1/destination-types', (route) =>
      refuse
        ? route.fulfill({
            status: 503,
            contentType: 'application/json',
            body: '{"status":503,"code":"UNAVAILABLE","message":"Try again shortly."}',
          })
        : route.continue(),
    );
    await page.goto(`${base}/portal/destinations/orders.v2`);
    await page.getByText('Try again shortly.').waitFor({ timeout: 30_000 });
    refuse = false;
    await page.getByRole('button', { name: 'Try again' }).click();
    await page.getByRole('heading', { name: 'Configuration' }).waitFor();
    t.pass('the settings show once the types load');
    await page.unroute('**/api/v1/destination-types');
  });

  t.test('copying the secret says so only when it was copied', async (t) => {
    await page.evaluate(() => {
      Object.defineProperty(navigator, 'clipboard', { value: { writeText: () => Promise.reject(new Error('denied')) } });
    });
    await page.getByRole('button', { name: 'Copy' }).click();
    await page.getByText(/did not allow copying/).waitFor();
    t.equal(await page.getByText('Secret copied.').count(), 0);
  });

  t.test('an entry with a value and no name is refused, not dropped', async (t) => {
    await page.getByRole('button', { name: 'Add custom header' }).click();
    await page.getByLabel('Custom headers value 1').fill('orphan value');
    await page.getByRole('button', { name: 'Save configuration' }).click();
    await page
      .getByText(/Every entry with a value needs a name/)
      .first()
      .waitFor();
    t.same((await stored('orders.v2')).config, { url: `${receiver.url}/orders.v2` }, 'nothing was saved');
    await page.getByRole('button', { name: 'Add metadata' }).click();
    await page.getByLabel('Metadata value 1').fill('lost');
    await page.getByRole('button', { name: 'Save metadata' }).click();
    t.equal(await page.getByText(/Every entry with a value needs a name/).count(), 2, 'the metadata entry too');
  });

  t.test('what the API refuses is shown at the field', async (t) => {
    await page.goto(`${base}/portal/new`);
    await page.locator('label.type-card', { hasText: 'Webhook' }).click();
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByRole('button', { name: 'Next' }).click();
    // The pattern takes it; the API's address check does not.
    await page.getByRole('textbox', { name: 'URL', exact: true }).fill('http://[::1');
    await page.getByRole('button', { name: 'Add custom header' }).click();
    await page.getByLabel('Custom headers name 1').fill('Content-Type');
    await page.getByLabel('Custom headers value 1').fill('text/plain');
    await page.getByRole('button', { name: 'Create destination' }).click();
    await page.locator('.field-error', { hasText: /^URL .+/ }).waitFor();
    await page.locator('.field-error', { hasText: /^Content-Type .*reserved/ }).waitFor();
    t.pass('each refusal beside its field');
  });

  t.test('credentials the API refuses: said at the field, nothing stored', async (t) => {
    const credentials = { connection_string: 'Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=k' };
    const created = await admin<Dest>('POST', '/api/v1/tenants/edge/destinations', {
      type: 'servicebus',
      topics: '*',
      config: { name: 'orders' },
      credentials,
    });
    t.equal(created.status, 201);
    const before = (created.body as unknown as { credentials: Record<string, string> }).credentials;
    await page.goto(`${base}/portal/destinations/${created.body.id}`);
    // The field's pattern takes it; the API wants the key in it too.
    await page.getByRole('textbox', { name: 'Connection string' }).fill('Endpoint=sb://ns.servicebus.windows.net/;EntityPath=orders');
    await page.getByRole('button', { name: 'Save credentials' }).click();
    await page.locator('.field-error', { hasText: /must hold SharedAccessKeyName/ }).waitFor();
    const masked = async () =>
      (await admin<{ credentials: Record<string, string> }>('GET', `/api/v1/tenants/edge/destinations/${created.body.id}`)).body
        .credentials;
    t.same(await masked(), before, 'the stored credentials are unchanged');
  });

  t.test('the typed-topics box holds only what no checkbox shows', async (t) => {
    const r = await admin<Dest>('POST', '/api/v1/tenants/edge/destinations', {
      type: 'webhook',
      topics: ['order.paid'],
      config: { url: `${receiver.url}/topics` },
    });
    await page.goto(`${base}/portal/destinations/${r.body.id}`);
    const box = page.getByRole('textbox', { name: 'Topics (comma separated)' });
    await box.waitFor();
    t.equal(await box.inputValue(), '', 'order.paid is a checkbox, not typed again');
    await page.getByRole('checkbox', { name: 'order.paid' }).uncheck();
    await page.getByRole('checkbox', { name: 'user.created' }).check();
    await box.fill('audit.login');
    await page.getByRole('button', { name: 'Save topics' }).click();
    await waitFor('the topics saved', async () => {
      const topics = (await admin<{ topics: string[] }>('GET', `/api/v1/tenants/edge/destinations/${r.body.id}`)).body.topics;
      return JSON.stringify(topics) === JSON.stringify(['user.created', 'audit.login']);
    });
    t.pass('the unticked topic stays unticked');
    // Its deliveries can be filtered by a topic the wildcard admits, typed.
    await admin('POST', '/api/v1/publish', { tenant_id: 'edge', topic: 'audit.login', data: { n: 1 } });
    await waitFor('the audit.login attempt', async () => {
      const listed = await admin<{ models: unknown[] }>('GET', `/api/v1/tenants/edge/destinations/${r.body.id}/attempts?topic=audit.login`);
      return listed.body.models.length > 0;
    });
    await page.goto(`${base}/portal/destinations/${r.body.id}/deliveries`);
    const filter = page.locator('#f-topic');
    await filter.waitFor();
    t.equal(
      await filter.evaluate((e) => (e as unknown as { tagName: string }).tagName),
      'INPUT',
      'typed, not a list of the named topics only',
    );
    await filter.fill('audit.login');
    await page.locator('table.attempts tbody tr', { hasText: 'audit.login' }).first().waitFor();
  });

  t.test('a disabled destination says why, and offers no retry', async (t) => {
    const published = await admin<{ id: string }>('POST', '/api/v1/publish', { tenant_id: 'edge', topic: 'user.created', data: { n: 1 } });
    t.equal(published.status, 202);
    await waitFor('the attempt', async () => {
      const r = await admin<{ models: unknown[] }>('GET', '/api/v1/tenants/edge/destinations/orders.v2/attempts');
      return r.body.models.length > 0;
    });
    t.equal((await admin('PUT', '/api/v1/tenants/edge/destinations/orders.v2/disable')).status, 200);
    await page.goto(`${base}/portal/destinations/orders.v2/deliveries`);
    await page.getByTestId('disabled-note').getByText('It was disabled by hand.').waitFor();
    const retry = page.getByRole('button', { name: 'Retry' }).first();
    await retry.waitFor();
    t.ok(await retry.isDisabled(), 'Retry is off while the destination is disabled');
  });

  t.test('the tenant deleted while the portal is open ends the session', async (t) => {
    t.equal((await admin('DELETE', '/api/v1/tenants/edge')).status, 200);
    await page.goto(`${base}/portal/`);
    await page.getByRole('heading', { name: 'Your session has ended' }).waitFor();
    t.pass('the ended page, not "Tenant not found." beside the actions');
  });
});
