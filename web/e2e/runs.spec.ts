import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
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

test("a run's webhook delivery is sent again from its page, with the same webhook-id", async ({ page }) => {
  const received: string[] = [];
  const receiver = createServer((req, res) => {
    received.push(String(req.headers['webhook-id']));
    req.resume();
    req.on('end', () => res.end('ok'));
  });
  await new Promise<void>((ok) => receiver.listen(0, '127.0.0.1', ok));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  try {
    const body = { type: 'node', target: 'upscale', input: { image: dataUri(png(16, 16)) }, webhook_url: url };
    const id = (await api('/api/v3/run', { method: 'POST', body: JSON.stringify(body) })).body.id;
    await expect.poll(() => received.length, { timeout: 30_000 }).toBe(1);
    await signIn(page);
    await page.goto(`${base()}/console/runs/${id}`);
    const row = page.getByTestId('delivery-row');
    await expect(row).toContainText('delivered');
    await page.getByRole('button', { name: /^Send msg_\w+ again$/ }).click();
    await expect.poll(() => received.length, { timeout: 30_000 }).toBe(2);
    expect(received[1]).toBe(received[0]);
    await expect(row).toContainText('replayed 1×');
  } finally {
    receiver.close();
  }
});
