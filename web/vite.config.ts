// The console is served by the binary at /console/ from crates/console/dist, which this
// build writes (and which is committed: the Rust build needs no Node).
import { defineConfig } from 'vitest/config';
import react from '@vitejs/plugin-react';

export default defineConfig({
  base: '/console/',
  plugins: [react()],
  build: {
    outDir: '../crates/console/dist',
    emptyOutDir: true,
    sourcemap: false,
    // One chunk for the console; the API reference page loads its own.
    chunkSizeWarningLimit: 1500,
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
