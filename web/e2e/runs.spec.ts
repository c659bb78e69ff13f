import { expect, test } from '@playwright/test';
import { api, axe, base, dataUri, png, recordViolations, policyViolations, shot, signIn } from './helpers';

test('history lists runs, filters them, cancels a running one and runs one again', async ({ page }) => {
  await recordViolations(page);
  await signIn(page);
  const input = { garment: dataUri(png(48, 48)), 'Tryon.model_image': dataUri(png(48, 72)) };
  const done = (await api('/api/v3/run', { method: 'POST', body: JSON.stringify({ type: 'workflow', target: 'tryon-upscale', input }) })).body.id;
  // Three nodes one after another, 1.5 s each at least: still running when canceled.
  const slow = (await api('/api/v3/run', { method: 'POST', body: JSON.stringify({ type: 'workflow', target: 'sketch-to-video', input: { sketch: dataUri(png(48, 64)) } }) })).body.id;

  await page.getByRole('link', { name: 'Runs' }).click();
  await expect(page.getByTestId('run-row').first()).toContainText(slow);
  await page.getByRole('link', { name: slow }).click();
  await expect(page.getByTestId('run-node-Dress')).toBeVisible();
  await page.getByRole('button', { name: 'Cancel run' }).click();
  await expect(page.getByTestId('run-status')).toHaveText('canceled');

  await page.goto(`${base()}/console/runs/${done}`);
  await expect(page.getByTestId('run-status')).toHaveText('succeeded', { timeout: 30_000 });
  await expect(page.getByTestId('run-node-Upscale')).toHaveAttribute('data-status', 'succeeded');
  await expect(page.getByTestId('output-final_image').locator('img')).toBeVisible();
  expect(await axe(page)).toEqual([]);
  await shot(page, 'run');
  await page.getByRole('button', { name: 'Run again with the same input' }).click();
  await expect(page).not.toHaveURL(new RegExp(done));
  await expect(page.getByTestId('run-status')).toHaveText('succeeded', { timeout: 30_000 });

  await page.goto(`${base()}/console/runs?status=canceled`);
  await expect(page.getByTestId('run-row')).toHaveCount(1);
  await expect(page.getByTestId('run-row').first()).toContainText(slow);
  await page.getByLabel('State').selectOption('succeeded');
  await expect(page.getByTestId('run-row').first()).toHaveAttribute('data-status', 'succeeded');
  expect(await policyViolations(page)).toEqual([]);
});
