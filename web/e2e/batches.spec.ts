import { expect, test } from '@playwright/test';
import { api, axe, base, png, recordViolations, policyViolations, shot, signIn } from './helpers';

/** Uploads a PNG as a client would; its `upload:` reference. */
async function upload(buf: Buffer): Promise<string> {
  const r = await api('/api/v3/uploads', { method: 'POST', body: new Uint8Array(buf), headers: { 'content-type': 'image/png' } });
  expect(r.status).toBe(200);
  return r.body.input as string;
}

test('a batch shows its progress live, its failed items with their errors, retries them and downloads its results', async ({ page }) => {
  await recordViolations(page);
  await signIn(page);
  const small = await upload(png(24, 24));
  // 4000 px wide, upscaled 4x, passes acceptance and fails when it runs: past the output limit.
  const wide = await upload(png(4000, 4));
  const items = [
    { ref: 'SKU-1', input: { image: small } },
    { ref: 'SKU-2', input: { image: small, scale: 4 } },
    { ref: 'SKU-wide', input: { image: wide, scale: 4 } },
  ];
  const made = await api('/api/v3/batches', { method: 'POST', body: JSON.stringify({ type: 'node', target: 'upscale', input: { scale: 2 }, items }) });
  expect(made.status).toBe(200);
  const id = made.body.id as string;

  await page.getByRole('link', { name: 'Batches' }).click();
  await expect(page.getByTestId('batch-row').first()).toContainText(id);
  await page.getByRole('link', { name: id }).click();
  // Followed live: the page moves to the end without a reload.
  await expect(page.getByTestId('batch-status')).toHaveText('finished', { timeout: 30_000 });
  await expect(page.getByTestId('batch-progress')).toHaveText('100%');
  await expect(page.getByTestId('count-succeeded')).toContainText('2');
  await expect(page.getByTestId('count-failed')).toContainText('1');
  // The failed items are shown first, with their error.
  const failed = page.getByTestId('batch-item');
  await expect(failed).toHaveCount(1);
  await expect(failed.first()).toContainText('SKU-wide');
  await expect(failed.first()).toContainText('InvalidImage');
  await expect(failed.first()).toContainText('output limits');
  expect(await axe(page)).toEqual([]);
  await shot(page, 'batch');

  // Downloads, through the session.
  const href = async (name: RegExp) => `${base()}${await page.getByRole('link', { name }).getAttribute('href')}`;
  const lines = await page.request.get(await href(/results \(JSON lines\)/));
  expect(lines.status()).toBe(200);
  expect((await lines.text()).trim().split('\n')).toHaveLength(3);
  const zip = await page.request.get(await href(/outputs \(ZIP\)/));
  expect(zip.status()).toBe(200);
  expect(zip.headers()['content-type']).toBe('application/zip');

  // A retry runs the failed item again: it fails again, its first run kept as an earlier run.
  await page.getByRole('button', { name: 'Retry 1 failed' }).click();
  await expect(page.getByTestId('batch-status')).toHaveText('finished', { timeout: 30_000 });
  await expect(page.getByTestId('count-failed')).toContainText('1');
  await expect(failed.first().getByRole('link')).toHaveCount(2);
  // Every item, by its state.
  await page.getByRole('button', { name: /^succeeded/ }).click();
  await expect(page.getByTestId('batch-item')).toHaveCount(2);
  await expect(page.getByTestId('batch-item').first()).toHaveAttribute('data-status', 'succeeded');
  expect(await policyViolations(page)).toEqual([]);

  // An unknown batch says so.
  await page.goto(`${base()}/console/batches/bat_0000000000000000`);
  await expect(page.getByRole('alert')).toContainText('bat_0000000000000000');
});
