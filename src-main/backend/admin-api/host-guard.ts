import type { FastifyInstance } from 'fastify';

/**
 * DNS rebinding: a web page on evil.example can point its own name at 127.0.0.1 and then talk to
 * the admin listener as a same-origin page would. Its requests carry `Host: evil.example`, so only
 * the names of this machine's loopback, the address the listener is bound to, and the name of
 * `--admin-origin` (a load balancer in front of several nodes) are served.
 */
export function allowOnlyHosts(app: FastifyInstance, bindHosts: string[]): void {
  const allowed = new Set(['127.0.0.1', 'localhost', '::1', ...bindHosts.map((h) => h.toLowerCase().replace(/^\[|\]$/g, ''))]);
  app.addHook('onRequest', async (request, reply) => {
    const host = request.headers.host;
    if (host === undefined) return; // HTTP/1.0 without Host: no browser, so no rebinding
    const name = hostName(host);
    if (name !== null && (allowed.has(name) || /^127(\.\d{1,3}){3}$/.test(name))) return;
    return reply
      .code(403)
      .header('connection', 'close')
      .send({
        error: 'ERROR_HOST_NOT_ALLOWED',
        message: `The admin side answers only to ${[...allowed].join(', ')} (and 127.x.x.x), not to "${host.slice(0, 100)}": to serve it under another name, start serve with --admin-origin`,
      });
  });
}

/** The name part of a Host header, lower-cased, IPv6 without brackets; null when malformed. */
export function hostName(host: string): string | null {
  const bracketed = /^\[([0-9a-fA-F:.]+)\](?::\d{1,5})?$/.exec(host);
  if (bracketed) return bracketed[1]!.toLowerCase();
  const plain = /^([^:\s]+)(?::\d{1,5})?$/.exec(host);
  return plain ? plain[1]!.toLowerCase() : null;
}
