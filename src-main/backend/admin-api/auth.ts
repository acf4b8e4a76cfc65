import { createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { randomHex } from '../util/tokens.ts';

const COOKIE = 'mdm_console';
/** The console stays signed in across browser restarts for 30 days (it is a loopback-only app). */
const COOKIE_MAX_AGE_S = 30 * 24 * 60 * 60;

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * Admin authentication: `Authorization: Bearer <admin token>` for scripts and the CLI; for the
 * console, a one-time ticket in the URL is exchanged for an HttpOnly, SameSite=Strict cookie,
 * so the admin token itself never sits in a URL, a log or the browser history.
 */
export class AdminAuth {
  private readonly adminToken: string;
  private readonly cookieValue: string;
  private readonly tickets = new Set<string>();

  constructor(adminToken: string) {
    this.adminToken = adminToken;
    // Derived from the token: rotating the admin token signs every console out.
    this.cookieValue = createHmac('sha256', adminToken).update('console-cookie').digest('hex');
  }

  /** A URL path that signs a browser in once. */
  issueTicket(): string {
    const ticket = randomHex(24);
    this.tickets.add(ticket);
    return ticket;
  }

  redeemTicket(ticket: string, reply: FastifyReply): boolean {
    if (!this.tickets.delete(ticket)) return false;
    reply.header('set-cookie', `${COOKIE}=${this.cookieValue}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${COOKIE_MAX_AGE_S}`);
    return true;
  }

  isAuthenticated(request: FastifyRequest): boolean {
    const bearer = /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? '')?.[1];
    if (bearer) return same(bearer, this.adminToken);
    const cookie = (request.headers.cookie ?? '')
      .split(';')
      .map((part) => part.trim().split('='))
      .find(([name]) => name === COOKIE)?.[1];
    return cookie !== undefined && same(cookie, this.cookieValue);
  }
}
