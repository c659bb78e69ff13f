import { expect, test } from '@playwright/test';
import { base, key } from './helpers';

test('signing in and running a tool work from the keyboard alone', async ({ page }) => {
  await page.goto(`${base()}/console/`);
  // The key field has the focus when the page opens.
  await expect(page.getByLabel('API key')).toBeFocused();
  await page.keyboard.type(key());
  await page.keyboard.press('Enter');
  await expect(page.getByRole('heading', { name: 'Dashboard' })).toBeVisible();

  await page.goto(`${base()}/console/playground?tool=virtual_model`);
  await expect(page.locator('[data-field="gender"]')).toBeVisible();
  // Through every control with Tab: each list left empty gets its first value with ArrowDown,
  // each required text field a word.
  const run = page.getByRole('button', { name: 'Run', exact: true });
  for (let i = 0; i < 80 && !(await run.evaluate((el) => el === document.activeElement)); i++) {
    await page.keyboard.press('Tab');
    const empty = await page.evaluate(() => {
      const el = document.activeElement;
      const required = !!el?.closest('.field')?.querySelector('.required');
      if (el instanceof HTMLSelectElement && el.value === '' && el.closest('form')) return 'list';
      if (el instanceof HTMLInputElement && el.type === 'text' && el.value === '' && required) return 'text';
      return null;
    });
    if (empty === 'list') await page.keyboard.press('ArrowDown');
    if (empty === 'text') await page.keyboard.type('studio');
  }
  await expect(run).toBeFocused();
  await expect(page.getByTestId('price')).toContainText('Costs');
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('playground-status')).toHaveText('succeeded', { timeout: 30_000 });
});
