// The browser bundle: built by `make` into services/web/static, which the web process serves.
import { defineConfig } from 'vite';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root: here,
  base: '/',
  build: { outDir: `${here}../static`, emptyOutDir: true, sourcemap: true, chunkSizeWarningLimit: 2000 },
  logLevel: 'warn',
});
