import { expect, test } from '@playwright/test';
import { base, recordViolations, policyViolations, signIn } from './helpers';

test('the API reference renders the OpenAPI document and tries requests as the signed-in account', async ({ page }) => {
  await recordViolations(page);
  await page.goto(`${base()}/console/docs`);
  await expect(page.getByLabel('API key')).toBeVisible(); // signed out: to the sign-in page
  await signIn(page);
  await page.getByRole('link', { name: 'API reference' }).click();
  await expect(page.locator('#docs-status')).toHaveText('Requests run as e2e.');
  await expect(page.getByText('Start a run of a tool or a saved workflow').first()).toBeVisible({ timeout: 30_000 });
  // "Test request" goes through the console's API with the session, never a key.
  const answer = await page.evaluate(async () => {
    const f = (window as unknown as { atelierFetch: (u: string, i?: RequestInit) => Promise<Response> }).atelierFetch;
    const tools = await f('/api/v3/tools', { headers: { 'x-api-key': 'atl_ignored' } });
    const estimate = await f('/api/v3/estimate', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ type: 'node', target: 'upscale', input: { image: 'https://example.com/a.png' } }) });
    return { tools: tools.status, count: (await tools.json()).length, url: tools.url, estimate: estimate.status, price: (await estimate.json()).tokens };
  });
  expect(answer).toEqual({ tools: 200, count: 12, url: `${base()}/console/api/v3/tools`, estimate: 200, price: 1 });
  await page.screenshot({ path: 'test-results/screenshots/docs.png' });
  // The viewer probes once whether it may compile code (`Function('')` in a try block, zod's
  // check) and works without; the policy keeps refusing it. Nothing else may be refused.
  expect((await policyViolations(page)).filter((v) => v !== 'script-src eval')).toEqual([]);
});
