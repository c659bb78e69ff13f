import { expect, test } from '@playwright/test';
import { api, axe, recordViolations, policyViolations, shot, signIn, watchPolicy } from './helpers';

test('keys are shown once, listed by prefix and revoked; balance and ledger match the API', async ({ page }) => {
  await recordViolations(page);
  const errors = watchPolicy(page);
  await signIn(page);
  const balance = (await api('/api/v2/user/tokens')).body.tokens;
  await expect(page.getByTestId('dashboard-balance')).toContainText(balance.toLocaleString('en-US'));

  await page.getByRole('button', { name: 'Create key' }).click();
  const shown = page.getByTestId('new-key');
  await expect(shown).toHaveText(/^atl_\w{40}$/);
  const created = (await shown.textContent())!;
  expect((await api('/api/v2/user/tokens', { apiKey: created })).status).toBe(200);
  await page.getByRole('button', { name: 'Done' }).click();
  await expect(shown).toHaveCount(0);
  await page.reload();
  await expect(page.getByTestId('key-row').first()).toContainText(created.slice(0, 8));
  expect(await page.content()).not.toContain(created);

  page.once('dialog', (d) => d.accept());
  await page.getByRole('button', { name: `Revoke ${created.slice(0, 8)}` }).click();
  await expect(page.getByTestId('key-row').first()).toContainText('revoked');
  expect((await api('/api/v2/user/tokens', { apiKey: created })).status).toBe(401);

  // The ledger holds the account's grant, as the API's balance says.
  await expect(page.getByTestId('ledger').locator('tr[data-kind="grant"]')).toHaveCount(1);
  expect(await axe(page)).toEqual([]);
  await shot(page, 'dashboard');
  expect(errors).toEqual([]);
  expect(await policyViolations(page)).toEqual([]);
});
