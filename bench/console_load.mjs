// Loads console pages in Debian's chromium (driven by playwright-core from web/node_modules)
// and prints, as JSON, how long each took from navigation to interactive, over `runs` cold
// loads (a fresh browser context each: nothing cached) and as many warm ones (the same
// context again). Used by bench/console.py.
//
// Interactive: the dashboard shows the account's keys (the page fetched /session, /keys,
// /usage and /ledger and rendered them); the editor shows the saved workflow's nodes on the
// canvas. The peer is a navigation to /healthz on the same server: a browser's floor for
// one page from this server.
import { createRequire } from 'node:module';
import { execSync } from 'node:child_process';

const require = createRequire(new URL('../web/package.json', import.meta.url));
const { chromium } = require('playwright-core');

const [base, key, runsArg] = process.argv.slice(2);
const runs = Number(runsArg ?? 20);
const executablePath = process.env.CHROMIUM ?? execSync('command -v chromium').toString().trim();
const browser = await chromium.launch({
  executablePath,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
});

const pages = {
  healthz: { path: '/healthz', ready: async (page) => page.waitForLoadState('load') },
  dashboard: { path: '/console/', ready: async (page) => page.locator('[data-testid="key-row"]').first().waitFor() },
  editor: { path: '/console/editor/tryon-upscale', ready: async (page) => page.locator('.react-flow__node').nth(2).waitFor() },
};

async function signedInContext() {
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  const r = await context.request.post(`${base}/console/api/session`, { data: { api_key: key } });
  if (r.status() !== 200) throw new Error(`sign-in: ${r.status()}`);
  return context;
}

async function measure(page, spec) {
  await page.goto(`${base}${spec.path}`, { waitUntil: 'commit' });
  await spec.ready(page);
  return page.evaluate(() => performance.now());
}

const results = {};
for (const [name, spec] of Object.entries(pages)) {
  const cold = [];
  const warm = [];
  for (let i = 0; i < runs; i++) {
    const context = await signedInContext();
    const page = await context.newPage();
    cold.push(await measure(page, spec));
    warm.push(await measure(page, spec));
    await context.close();
  }
  results[name] = { cold, warm };
}
const sizes = await (async () => {
  const context = await signedInContext();
  const page = await context.newPage();
  let js = 0;
  let css = 0;
  page.on('response', async (r) => {
    const type = r.headers()['content-type'] ?? '';
    const length = Number(r.headers()['content-length'] ?? 0);
    if (type.includes('javascript')) js += length;
    if (type.includes('css')) css += length;
  });
  await measure(page, pages.dashboard);
  await context.close();
  return { js, css };
})();
await browser.close();
console.log(JSON.stringify({ runs, results, sizes, chromium: execSync(`${executablePath} --version`).toString().trim() }));
