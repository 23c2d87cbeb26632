// Builds the portal into dist/, served by the gateway at /portal (services/gateway/src/portal.ts).
// `npm run dev -w @switchyard/portal` serves it with hot reload and proxies the API to a local
// gateway (VITE_API, default http://127.0.0.1:3333).
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

export default defineConfig({
  base: '/portal/',
  plugins: [react()],
  // tap (a dev dependency of the repository) hoists React 18 to the root node_modules; the app's
  // libraries must all use this workspace's React 19.
  resolve: { dedupe: ['react', 'react-dom'] },
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 1024 },
  server: { proxy: { '/api': process.env.VITE_API ?? 'http://127.0.0.1:3333' } },
});
