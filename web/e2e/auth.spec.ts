import { expect, test } from '@playwright/test';
import { axe, base, key, recordViolations, policyViolations, shot, signIn, watchPolicy } from './helpers';

test('a wrong key is refused; the right one opens a session the page cannot read', async ({ page, context }) => {
  await recordViolations(page);
  const errors = watchPolicy(page);
  await page.goto(`${base()}/`);
  await expect(page).toHaveURL(/\/console\/$/);
  await page.getByLabel('API key').fill('atl_wrong');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('alert')).toContainText('X-API-KEY');
  expect(await axe(page)).toEqual([]);
  await shot(page, 'sign-in');

  await signIn(page);
  const cookies = await context.cookies();
  const session = cookies.find((c) => c.name === 'atelier_session');
  expect(session).toBeTruthy();
  expect(session!.httpOnly).toBe(true);
  expect(session!.sameSite).toBe('Strict');
  expect(await page.evaluate(() => document.cookie)).not.toContain('atelier_session');
  const stored = await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }));
  expect(stored).not.toContain('atl_');
  expect(await page.content()).not.toContain(key());

  // The cookie alone opens nothing under /api.
  const tools = await page.request.get(`${base()}/api/v3/tools`);
  expect(tools.status()).toBe(401);
  // A change without the CSRF token, or from another origin, is refused.
  const noToken = await page.request.post(`${base()}/console/api/keys`);
  expect(noToken.status()).toBe(403);
  const token = (await (await page.request.get(`${base()}/console/api/session`)).json()).csrf_token;
  const foreign = await page.request.post(`${base()}/console/api/keys`, { headers: { 'x-csrf-token': token, origin: 'http://evil.example' } });
  expect(foreign.status()).toBe(403);
  expect(errors).toEqual([]);
  expect(await policyViolations(page)).toEqual([]);

  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page.getByLabel('API key')).toBeVisible();
  expect((await page.request.get(`${base()}/console/api/session`)).status()).toBe(401);
});
