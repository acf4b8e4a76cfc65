import type { FastifyPluginAsync } from 'fastify';
import { createReadStream, statSync } from 'node:fs';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
};

/** Where `electron-vite build` puts the console; MDM_CONSOLE_RENDERER_DIR overrides it. */
export function rendererDir(): string {
  return process.env.MDM_CONSOLE_RENDERER_DIR ?? fileURLToPath(new URL('../../../out/renderer', import.meta.url));
}

/** The console's Content-Security-Policy: no inline script, nothing from elsewhere. */
export const CONSOLE_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; font-src 'self' data:; object-src 'none'; frame-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/** Serves the built console (single-page app) with a strict CSP; anything under /api/ is not a page. */
export const serveConsole: FastifyPluginAsync = async (app) => {
  const root = resolve(rendererDir());
  const security = {
    'content-security-policy': CONSOLE_CSP,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  };
  app.get('/*', async (request, reply) => {
    if (request.url === '/api' || request.url.startsWith('/api/')) {
      return reply.code(404).send({ error: 'ERROR_NOT_FOUND', message: 'No such admin endpoint' });
    }
    let path = '/';
    try {
      path = decodeURIComponent(request.url.split('?')[0]!);
    } catch {
      // A malformed escape is no file of ours: fall through to the app's index.
    }
    // No file name of ours holds a NUL (and the file system calls would throw on one).
    if (path.includes('\0'))
      return reply.code(400).type('text/plain; charset=utf-8').send('Bad Request: the path holds a NUL character');
    // A name too long (ENAMETOOLONG), a path through a file (ENOTDIR) …: no file of ours either.
    const isFile = (candidate: string) => {
      try {
        return statSync(candidate, { throwIfNoEntry: false })?.isFile() ?? false;
      } catch {
        return false;
      }
    };
    let file = normalize(join(root, path));
    if (!file.startsWith(root + sep) || !isFile(file)) file = join(root, 'index.html');
    if (!isFile(file)) {
      return reply
        .code(503)
        .type('text/html; charset=utf-8')
        .send(
          '<!doctype html><title>Console not built</title><p>The console has not been built yet: run <code>npm run build</code>, then reload.</p>',
        );
    }
    const isIndex = file.endsWith('index.html');
    return reply
      .headers(security)
      .header('cache-control', isIndex ? 'no-store' : 'public, max-age=31536000, immutable')
      .type(TYPES[extname(file)] ?? 'application/octet-stream')
      .send(createReadStream(file));
  });
};
