import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { deflateSync } from 'node:zlib';
import { expect, type Page } from '@playwright/test';

const require = createRequire(import.meta.url);
const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

export const base = () => process.env.ATELIER_URL!;
export const key = () => process.env.ATELIER_KEY!;
export const poorKey = () => process.env.ATELIER_POOR_KEY!;
export const readKey = () => process.env.ATELIER_READ_KEY!;

export async function signIn(page: Page, apiKey = key()) {
  await page.goto(`${base()}/console/`);
  await page.getByLabel('API key').fill(apiKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('heading', { name: 'Dashboard' })).toBeVisible();
}

/** Calls the public API with a key, as a client would. */
export async function api(path: string, init: RequestInit & { apiKey?: string } = {}) {
  const headers = { 'x-api-key': init.apiKey ?? key(), 'content-type': 'application/json', ...(init.headers ?? {}) };
  const r = await fetch(`${base()}${path}`, { ...init, headers });
  return { status: r.status, body: await r.json().catch(() => null) };
}

/** Fails on anything the page's Content-Security-Policy refused, and on console errors. */
export function watchPolicy(page: Page): string[] {
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' && !/Failed to load resource: the server responded with a status of (401|402|403|404|409|422)/.test(m.text())) problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(e.message));
  return problems;
}

export async function policyViolations(page: Page): Promise<string[]> {
  return page.evaluate(() => (window as unknown as { __violations?: string[] }).__violations ?? []);
}

/** Records CSP violations in the page, from its start. */
export async function recordViolations(page: Page) {
  await page.addInitScript(() => {
    const w = window as unknown as { __violations: string[] };
    w.__violations = [];
    document.addEventListener('securitypolicyviolation', (e) => w.__violations.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
}

/** Runs axe-core in the page; the serious and critical violations. */
export async function axe(page: Page): Promise<string[]> {
  // Evaluated by the browser's debugger protocol: the page's policy (no inline scripts) is not bypassed for the page itself.
  await page.evaluate(AXE);
  const result = await page.evaluate(async () => {
    const a = (window as unknown as { axe: { run: (ctx: unknown, opts: unknown) => Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }> } }).axe;
    const r = await a.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, targets: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) }));
  });
  return result.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.impact}): ${v.targets.join(', ')}`);
}

// A PNG encoder (RGB, no filter), for fixtures made in the test: no files, no downloads.
const CRC = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();
function crc32(buf: Buffer): number {
  let c = 0xffffffff;
  for (const b of buf) c = CRC[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
function chunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([len, body, crc]);
}

/** A w×h PNG: a coloured figure on a light background. */
export function png(w: number, h: number): Buffer {
  const rows: Buffer[] = [];
  for (let y = 0; y < h; y++) {
    const row = Buffer.alloc(1 + w * 3);
    for (let x = 0; x < w; x++) {
      const inside = Math.abs(x - w / 2) < w / 4 && Math.abs(y - h / 2) < h / 3;
      row[1 + x * 3] = inside ? 150 : 235;
      row[2 + x * 3] = inside ? 40 + ((x * 7) % 60) : 232;
      row[3 + x * 3] = inside ? 90 : 228;
    }
    rows.push(row);
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr[8] = 8;
  ihdr[9] = 2;
  return Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(Buffer.concat(rows))), chunk('IEND', Buffer.alloc(0))]);
}

export const dataUri = (buf: Buffer) => `data:image/png;base64,${buf.toString('base64')}`;

export async function shot(page: Page, name: string) {
  await page.screenshot({ path: `test-results/screenshots/${name}.png`, fullPage: true });
}
