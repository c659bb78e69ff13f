// The console is served by the binary at /console/ from crates/console/dist, which this
// build writes (and which is committed: the Rust build needs no Node).
import { copyFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import react from '@vitejs/plugin-react';

const here = dirname(fileURLToPath(import.meta.url));

/** The API reference's viewer: Scalar's prebuilt bundle, copied as published on npm. */
function vendorScalar() {
  return {
    name: 'vendor-scalar',
    closeBundle() {
      const from = join(here, 'node_modules/@scalar/api-reference/dist/browser/standalone.js');
      const to = join(here, '../crates/console/dist/vendor');
      mkdirSync(to, { recursive: true });
      copyFileSync(from, join(to, 'scalar-api-reference.js'));
    },
  };
}

export default defineConfig({
  base: '/console/',
  plugins: [react(), vendorScalar()],
  build: {
    outDir: '../crates/console/dist',
    emptyOutDir: true,
    sourcemap: false,
    // One chunk for the console; the API reference page loads its own.
    chunkSizeWarningLimit: 1500,
    rollupOptions: {
      input: { main: join(here, 'index.html'), docs: join(here, 'docs.html') },
    },
  },
  server: {
    // `npm run dev` against a service on the default port.
    proxy: {
      '/console/api': 'http://127.0.0.1:8080',
      '/api': 'http://127.0.0.1:8080',
      '/files': 'http://127.0.0.1:8080',
      '/openapi.json': 'http://127.0.0.1:8080',
    },
  },
  test: {
    include: ['src/**/*.test.ts'],
    environment: 'node',
  },
});
