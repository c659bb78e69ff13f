import { expect, test } from '@playwright/test';
import { api, axe, base, png, poorKey, recordViolations, policyViolations, shot, signIn, watchPolicy } from './helpers';

test('an upscale runs from its generated form to an image twice the size', async ({ page }) => {
  await recordViolations(page);
  const errors = watchPolicy(page);
  await signIn(page);
  await page.getByRole('link', { name: 'Playground' }).click();
  await page.getByTestId('target').selectOption('tool:upscale');
  const tools = (await api('/api/v3/tools')).body as { name: string; params: { name: string; required: boolean; values?: unknown[] }[] }[];
  const upscale = tools.find((t) => t.name === 'upscale')!;
  for (const p of upscale.params) {
    const field = page.locator(`[data-field="${p.name}"]`);
    await expect(field).toBeVisible();
    await expect(field.locator('.required')).toHaveCount(p.required ? 1 : 0);
  }
  await page.getByLabel('image file').setInputFiles({ name: 'look.png', mimeType: 'image/png', buffer: png(64, 48) });
  await expect(page.getByAltText('image preview')).toBeVisible();
  await expect(page.getByTestId('price')).toContainText('Costs 1 tokens');
  const before = (await api('/api/v2/user/tokens')).body.tokens;
  await page.getByRole('button', { name: 'Run' }).click();
  await expect(page.getByTestId('playground-status')).toHaveText('succeeded', { timeout: 30_000 });
  const img = page.getByTestId('output-image').first();
  await expect(img).toBeVisible();
  await expect.poll(() => img.evaluate((el: HTMLImageElement) => el.naturalWidth)).toBe(128);
  expect(await img.evaluate((el: HTMLImageElement) => el.naturalHeight)).toBe(96);
  // With signed output URLs (`.ci/run` runs these tests again so) the image is one.
  const src = await img.getAttribute('src');
  expect(src?.includes('&signature=')).toBe(process.env.ATELIER__OUTPUTS__ACCESS === 'signed');
  await expect(page.getByTestId('balance')).toContainText(`${before - 1} tokens`);
  expect(await axe(page)).toEqual([]);
  await shot(page, 'playground');
  expect(errors).toEqual([]);
  expect(await policyViolations(page)).toEqual([]);
});

test('a video plays', async ({ page }) => {
  await recordViolations(page);
  await signIn(page);
  await page.goto(`${base()}/console/playground?tool=video`);
  await page.getByLabel('image file').setInputFiles({ name: 'look.png', mimeType: 'image/png', buffer: png(64, 96) });
  await page.getByRole('button', { name: 'Run' }).click();
  await expect(page.getByTestId('playground-status')).toHaveText('succeeded', { timeout: 30_000 });
  const video = page.getByTestId('output-video').first();
  await expect.poll(() => video.evaluate((v: HTMLVideoElement) => v.readyState), { timeout: 15_000 }).toBeGreaterThanOrEqual(2);
  const duration = await video.evaluate((v: HTMLVideoElement) => v.duration);
  expect(duration).toBeGreaterThan(0.5);
  expect(await policyViolations(page)).toEqual([]);
});

test('without tokens a run is refused with what it needs, and nothing runs', async ({ page }) => {
  await signIn(page, poorKey());
  await page.goto(`${base()}/console/playground?tool=upscale`);
  await page.getByLabel('image file').setInputFiles({ name: 'look.png', mimeType: 'image/png', buffer: png(32, 32) });
  await page.getByRole('button', { name: 'Run' }).click();
  await expect(page.getByTestId('run-refused')).toContainText('needs 1, the balance is 0');
  const runs = await api('/api/v3/runs', { apiKey: poorKey() });
  expect(runs.body.runs).toEqual([]);
  expect((await api('/api/v2/user/tokens', { apiKey: poorKey() })).body.tokens).toBe(0);
});
