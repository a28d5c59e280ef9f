// The answer frame for outside agents' chats (MCP Apps): the renderer as one self-contained HTML document,
// which the MCP front serves as its ui:// resource. The frame has no network, so scripts, styles and fonts
// are inlined (vite-plugin-singlefile), not fetched.
import { defineConfig, mergeConfig } from 'vite';
import { fileURLToPath } from 'node:url';
import { viteSingleFile } from 'vite-plugin-singlefile';
import web from './vite.config.js';

const here = fileURLToPath(new URL('.', import.meta.url));

// Built right after web's bundle (make frontend), whose build wrote the catalog schemas: not written again here.
export default mergeConfig({ ...web, plugins: [] }, defineConfig({
  plugins: [viteSingleFile({ removeViteModuleLoader: true })],
  build: {
    outDir: `${here}../../mcp/static`, emptyOutDir: true, sourcemap: false,
    rollupOptions: { input: `${here}answer.html` },
  },
}));
