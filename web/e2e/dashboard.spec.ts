import { expect, test } from '@playwright/test';
import { api, axe, base, readKey, recordViolations, policyViolations, shot, signIn, watchPolicy } from './helpers';

test('keys are shown once, listed by prefix and revoked; balance and ledger match the API', async ({ page }) => {
  await recordViolations(page);
  const errors = watchPolicy(page);
  await signIn(page);
  const balance = (await api('/api/v2/user/tokens')).body.tokens;
  await expect(page.getByTestId('dashboard-balance')).toContainText(balance.toLocaleString('en-US'));

  // A new key holds run and read unless chosen otherwise: this one, read only.
  await expect(page.getByTestId('scope-run')).toBeChecked();
  await expect(page.getByTestId('scope-workflows')).not.toBeChecked();
  await page.getByTestId('scope-run').uncheck();
  await page.getByRole('button', { name: 'Create key' }).click();
  const shown = page.getByTestId('new-key');
  await expect(shown).toHaveText(/^atl_\w{40}$/);
  const created = (await shown.textContent())!;
  expect((await api('/api/v2/user/tokens', { apiKey: created })).status).toBe(200);
  const refused = await api('/api/v3/run', { apiKey: created, method: 'POST', body: '{}' });
  expect([refused.status, refused.body.error.name]).toEqual([403, 'Forbidden']);
  await expect(page.getByTestId('key-row').first().getByTestId('key-scopes')).toHaveText('read');
  await page.getByRole('button', { name: 'Done' }).click();
  await expect(shown).toHaveCount(0);
  await page.reload();
  await expect(page.getByTestId('key-row').first()).toContainText(created.slice(0, 8));
  expect(await page.content()).not.toContain(created);

  // Spend limits: set on the key's row, in force for its next request.
  await page.getByRole('button', { name: `Limits of ${created.slice(0, 8)}` }).click();
  await page.getByTestId('limit-daily').fill('lots');
  await page.getByRole('button', { name: 'Save limits' }).click();
  await expect(page.getByRole('alert')).toContainText('daily: a whole number');
  await page.getByTestId('limit-daily').fill('0');
  await page.getByTestId('limit-running_nodes').fill('2');
  await page.getByRole('button', { name: 'Save limits' }).click();
  const row = page.getByTestId('key-row').first();
  await expect(row.getByTestId('key-spend')).toContainText('today 0 / 0');
  await expect(row.getByTestId('key-spend')).toContainText('nodes 0 / 2');
  const usage = await api('/api/v3/usage', { apiKey: created });
  expect([usage.body.key.daily.limit, usage.body.key.running_nodes_limit]).toEqual([0, 2]);

  page.once('dialog', (d) => d.accept());
  await page.getByRole('button', { name: `Revoke ${created.slice(0, 8)}` }).click();
  await expect(page.getByTestId('key-row').first()).toContainText('revoked');
  expect((await api('/api/v2/user/tokens', { apiKey: created })).status).toBe(401);

  // The account's webhook endpoint, where spend alerts go: set, as the API reads it, and removed.
  const hook = 'https://93.184.215.14/atelier';
  await page.getByTestId('endpoint-url').fill(hook);
  await page.getByRole('button', { name: 'Save', exact: true }).click();
  await expect(page.getByRole('button', { name: 'Remove', exact: true })).toBeVisible();
  expect((await api('/api/v3/webhooks/endpoint')).body.url).toBe(hook);
  await page.getByRole('button', { name: 'Remove', exact: true }).click();
  await expect(page.getByRole('button', { name: 'Remove', exact: true })).toHaveCount(0);
  expect((await api('/api/v3/webhooks/endpoint')).body.url).toBeNull();

  // The audit log shows what was just done, by this session, newest first.
  await page.getByRole('link', { name: 'Audit log' }).click();
  await expect(page.getByRole('heading', { name: 'Audit log' })).toBeVisible();
  const audit = page.getByTestId('audit');
  for (const action of ['key.created', 'key.limits_set', 'key.revoked', 'webhook_endpoint.set', 'session.signed_in']) {
    await expect(audit.locator(`tr[data-action="${action}"]`).first()).toBeVisible();
  }
  await expect(audit.locator('tr[data-action="key.revoked"]').first()).toContainText(created.slice(0, 8));
  await page.getByTestId('audit-action').selectOption('key.');
  await expect(audit.locator('tr[data-action^="session."]')).toHaveCount(0);
  await expect(audit.locator('tr[data-action="key.created"]').first()).toBeVisible();
  expect(await axe(page)).toEqual([]);
  await page.getByRole('link', { name: 'Dashboard' }).click();

  // The ledger holds the account's grant, as the API's balance says.
  await expect(page.getByTestId('ledger').locator('tr[data-kind="grant"]')).toHaveCount(1);
  expect(await axe(page)).toEqual([]);
  await shot(page, 'dashboard');
  expect(errors).toEqual([]);
  expect(await policyViolations(page)).toEqual([]);
});

test('a read-only key signs in to a console that offers only what it may do', async ({ page }) => {
  const errors = watchPolicy(page);
  await signIn(page, readKey());
  await expect(page.getByRole('heading', { name: 'API keys' })).toHaveCount(0);
  await expect(page.getByRole('link', { name: 'Audit log' })).toHaveCount(0);
  await expect(page.getByTestId('ledger')).toBeVisible();
  // The server refuses what the page hides.
  const keys = await page.evaluate(async (url) => (await fetch(`${url}/console/api/keys`)).status, base());
  expect(keys).toBe(403);
  await page.goto(`${base()}/console/playground?tool=upscale`);
  await expect(page.getByRole('button', { name: 'Run' })).toBeDisabled();
  await page.goto(`${base()}/console/workflows`);
  await expect(page.getByRole('heading', { name: 'Workflows' })).toBeVisible();
  await expect(page.getByRole('button', { name: /^Delete / })).toHaveCount(0);
  expect(errors.filter((e) => !e.includes('403'))).toEqual([]);
});
