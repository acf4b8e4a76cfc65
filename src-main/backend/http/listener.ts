import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyServerOptions } from 'fastify';

type RequestHandler = (request: IncomingMessage, response: ServerResponse) => void;

/** Fastify's defaults for the server it would have made itself (lib/server.js). */
const FASTIFY_KEEP_ALIVE_MS = 72_000;

/**
 * An HTTP listener bound before the app that answers on it is built, so its port is a plain value
 * by the time links, agent records and server.json are made. The app plugs in through Fastify's
 * `serverFactory`; requests that arrive while it is still being built wait until `serve()`.
 */
export class Listener {
  readonly server: Server;
  readonly port: number;
  private handler: RequestHandler | null = null;
  private served = false;
  private markReady: () => void = () => {};
  private closing: Promise<void> | null = null;
  private readonly appReady = new Promise<void>((resolve) => (this.markReady = resolve));

  private constructor(server: Server) {
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
    server.on('request', (request: IncomingMessage, response: ServerResponse) => {
      if (this.served) this.handler!(request, response);
      else void this.appReady.then(() => this.handler!(request, response));
    });
  }

  /** Binds `host:port` (0: any free port); fails as `server.listen` does (EADDRINUSE, EACCES …). */
  static async bind(port: number, host: string, options: { requestTimeout?: number; backlog?: number } = {}): Promise<Listener> {
    const server = createServer({ requestTimeout: options.requestTimeout ?? 0, keepAliveTimeout: FASTIFY_KEEP_ALIVE_MS });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ port, host, ...(options.backlog ? { backlog: options.backlog } : {}) }, () => {
        server.off('error', reject);
        resolve();
      });
    });
    return new Listener(server);
  }

  /** For `Fastify({ serverFactory })`: the app's handler, with the timeouts it asks for. */
  readonly serverFactory = (handler: RequestHandler, options: FastifyServerOptions): Server => {
    this.handler = handler;
    this.server.keepAliveTimeout = options.keepAliveTimeout ?? FASTIFY_KEEP_ALIVE_MS;
    this.server.requestTimeout = options.requestTimeout ?? 0;
    this.server.setTimeout(options.connectionTimeout ?? 0);
    return this.server;
  };

  /** The app is ready: waiting and later requests reach it. */
  serve(): void {
    if (!this.handler) throw new Error('serve() before an app was built on this listener');
    this.served = true;
    this.markReady();
  }

  /** Drops every connection (long-lived event streams included) and stops listening. */
  close(): Promise<void> {
    this.closing ??= new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
    return this.closing;
  }
}
