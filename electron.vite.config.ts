import { resolve } from 'node:path';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'electron-vite';

// One build for the desktop app: the shell (main + preload) and the console (renderer). The
// renderer in out/renderer is also what `npm run serve` serves to a browser.
export default defineConfig({
  main: {
    build: {
      outDir: 'out/main',
      rollupOptions: {
        input: {
          index: resolve(import.meta.dirname, 'src-main/electron/main.ts'),
          // The APK reader's worker thread, loaded by file (backend/files/apk-manifest.ts) as out/main/apk-worker.js.
          'apk-worker': resolve(import.meta.dirname, 'src-main/backend/files/apk-worker.ts'),
        },
      },
    },
  },
  preload: {
    build: {
      outDir: 'out/preload',
      rollupOptions: {
        input: { index: resolve(import.meta.dirname, 'src-main/electron/preload.ts') },
        // A sandboxed preload must be CommonJS.
        output: { format: 'cjs', entryFileNames: '[name].cjs' },
      },
    },
  },
  renderer: {
    root: resolve(import.meta.dirname, 'src-renderer'),
    plugins: [
      react(),
      // The console is served over HTTP by the admin listener at / (the desktop window loads it
      // from there too), so asset URLs are absolute: /invitations/12 must find /assets/….
      // electron-vite presets './' (for file://), hence a plugin that runs after its preset.
      { name: 'console-absolute-base', config: () => ({ base: '/' }) },
    ],
    build: {
      outDir: resolve(import.meta.dirname, 'out/renderer'),
      emptyOutDir: true,
      minify: true,
      chunkSizeWarningLimit: 1500,
      rollupOptions: { input: resolve(import.meta.dirname, 'src-renderer/index.html') },
    },
  },
});
