// Browser tests of the console: Debian's chromium (Playwright's own download is not used),
// driven against the `atelier` binary that e2e/global-setup.ts starts on a free loopback
// port with a temporary data directory.
import { execSync } from 'node:child_process';
import { defineConfig } from '@playwright/test';

const chromium = process.env.CHROMIUM ?? execSync('command -v chromium || command -v chromium-browser').toString().trim();

export default defineConfig({
  testDir: 'e2e',
  globalSetup: './e2e/global-setup.ts',
  workers: 1,
  retries: process.env.CI ? 1 : 0,
  timeout: 60_000,
  expect: { timeout: 15_000 },
  reporter: [['list'], ['junit', { outputFile: 'test-results/junit.xml' }]],
  use: {
    trace: 'retain-on-failure',
    screenshot: 'only-on-failure',
    viewport: { width: 1440, height: 900 },
    launchOptions: {
      executablePath: chromium,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-quic', '--no-first-run'],
    },
  },
});
