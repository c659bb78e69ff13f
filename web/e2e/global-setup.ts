// Starts `atelier serve` for the browser tests: ATELIER_BIN, else the newer of the release
// and the debug binary; a temporary data directory; two accounts (one with tokens, one without)
// and a read-only key of the first;
// nodes slowed to 1.5 s so that running states can be seen and canceled. Tests read the
// address and keys from the environment.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export default async function globalSetup() {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
  // ATELIER_BIN may be relative to the repository's root (`.ci/run` runs from there).
  const bin = process.env.ATELIER_BIN
    ? resolve(root, process.env.ATELIER_BIN)
    : [join(root, 'target/release/atelier'), join(root, 'target/debug/atelier')]
        .filter((p) => existsSync(p))
        .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
  if (!bin) throw new Error('no atelier binary: build one (cargo build --release) or set ATELIER_BIN');
  const dir = mkdtempSync(join(tmpdir(), 'atelier-e2e-'));
  const account = (name: string, tokens: number) =>
    JSON.parse(execFileSync(bin, ['--data-dir', dir, 'admin', 'account', 'create', name, '--tokens', String(tokens), '--json']).toString())
      .api_key as string;
  process.env.ATELIER_KEY = account('e2e', 1000);
  process.env.ATELIER_POOR_KEY = account('poor', 0);
  // A key of the first account that may only read (`atelier admin key create --scopes read`).
  process.env.ATELIER_READ_KEY = JSON.parse(
    execFileSync(bin, ['--data-dir', dir, 'admin', 'key', 'create', 'e2e', '--scopes', 'read', '--json']).toString(),
  ).api_key as string;

  const server = spawn(bin, ['--data-dir', dir, 'serve', '--listen', '127.0.0.1:0', '--workers', '2'], {
    env: {
      ...process.env,
      ATELIER__WORKER__SIMULATED_LATENCY_MS: '1500',
      ATELIER__CONSOLE__SIGN_IN_FAILURES_PER_MINUTE: '100',
      // The webhook receiver of the runs test listens on this machine.
      ATELIER__INPUTS__ALLOW_PRIVATE_ADDRESSES: 'true',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  const base = await new Promise<string>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`atelier serve did not start:\n${log}`)), 30_000);
    const read = (chunk: Buffer) => {
      log += chunk.toString();
      const m = /Atelier listening on (http:\/\/\S+)/.exec(log);
      if (m) {
        clearTimeout(timer);
        ok(m[1]);
      }
    };
    server.stdout.on('data', read);
    server.stderr.on('data', read);
    server.on('exit', (code) => fail(new Error(`atelier serve exited (${code}):\n${log}`)));
  });
  process.env.ATELIER_URL = base;
  return async () => {
    server.kill('SIGTERM');
    await new Promise((r) => server.on('exit', r));
    rmSync(dir, { recursive: true, force: true });
  };
}
