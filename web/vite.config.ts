// Vite build of the admin dashboard: `npx vite build web` from the repository root writes
// web/dist, which the server reads at start-up and serves at /admin/.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root,
  base: '/admin/',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // one small app: a single chunk keeps the HTML to one script URL
    assetsInlineLimit: 0,
    reportCompressedSize: false,
  },
  server: {
    // `npx vite web` for development: the API comes from a running registry on :8080
    proxy: { '/admin/session': 'http://127.0.0.1:8080', '/admin/api': 'http://127.0.0.1:8080', '/sandbox': 'http://127.0.0.1:8080' },
  },
});
