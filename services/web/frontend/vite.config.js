// The browser bundle: built by `make` into services/web/static, which the web process serves.
import { defineConfig } from 'vite';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const repo = fileURLToPath(new URL('../../..', import.meta.url));

// The components' zod prop schemas, written from the catalog's YAML contracts before every build (the Python
// that loads them for the services writes them, so the browser and the compiler read the same contracts).
function catalogSchemas() {
  return {
    name: 'tessera-catalog-schemas',
    buildStart() {
      const python = process.env.TESSERA_PYTHON || `${repo}.venv/bin/python`;
      execFileSync(python, [`${here}tools/catalog_schemas.py`, `${here}src/generated/catalog-schemas.js`],
        { cwd: repo, stdio: 'inherit', env: { ...process.env, PYTHONPATH: repo } });
    },
  };
}

export default defineConfig({
  root: here,
  base: '/',
  plugins: [catalogSchemas()],
  build: { outDir: `${here}../static`, emptyOutDir: true, sourcemap: true, chunkSizeWarningLimit: 2000 },
  logLevel: 'warn',
});
