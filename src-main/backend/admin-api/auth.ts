import { createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { randomHex } from '../util/tokens.ts';

const COOKIE = 'mdm_console';
/** A sign-in link printed by `serve` or `mdm-console console` is good for this long, and once. */
const TICKET_LIFETIME_MS = 15 * 60 * 1000;
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function isSameOrigin(request: FastifyRequest): boolean {
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined) return site === 'same-origin';
  const origin = request.headers.origin;
  return origin !== undefined && origin === `http://${request.headers.host}`;
}
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
  /** One-time sign-in tickets and when each stops being valid. */
  private readonly tickets = new Map<string, number>();

  constructor(adminToken: string) {
    this.adminToken = adminToken;
    // Derived from the token: rotating the admin token signs every console out.
    this.cookieValue = createHmac('sha256', adminToken).update('console-cookie').digest('hex');
  }

  /** A URL path that signs a browser in once. */
  issueTicket(): string {
    const now = Date.now();
    for (const [old, expires] of this.tickets) if (expires <= now) this.tickets.delete(old);
    const ticket = randomHex(24);
    this.tickets.set(ticket, now + TICKET_LIFETIME_MS);
    return ticket;
  }

  redeemTicket(ticket: string, reply: FastifyReply): boolean {
    const expires = this.tickets.get(ticket);
    this.tickets.delete(ticket);
    if (expires === undefined || expires <= Date.now()) return false;
    this.setCookie(reply);
    return true;
  }

  /**
   * The console's sign-in page: what the admin pasted is the admin token, a sign-in link
   * (`…/auth?ticket=…`) or the ticket alone. Sets the cookie when it is good.
   */
  signIn(credential: string, reply: FastifyReply): 'token' | 'link' | null {
    const text = credential.trim();
    if (same(text, this.adminToken)) {
      this.setCookie(reply);
      return 'token';
    }
    const ticket = /[?&]ticket=([0-9a-f]+)/i.exec(text)?.[1] ?? (/^[0-9a-f]{48}$/i.test(text) ? text : null);
    return ticket !== null && this.redeemTicket(ticket.toLowerCase(), reply) ? 'link' : null;
  }

  private setCookie(reply: FastifyReply): void {
    reply.header('set-cookie', `${COOKIE}=${this.cookieValue}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${COOKIE_MAX_AGE_S}`);
  }

  isAuthenticated(request: FastifyRequest): boolean {
    const bearer = /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? '')?.[1];
    if (bearer) return same(bearer, this.adminToken);
    const cookie = (request.headers.cookie ?? '')
      .split(';')
      .map((part) => part.trim().split('='))
      .find(([name]) => name === COOKIE)?.[1];
    if (cookie === undefined || !same(cookie, this.cookieValue)) return false;
    // SameSite treats every port of 127.0.0.1 as one site: a page served by another local program
    // could still send the cookie along. Changes must come from the console's own origin.
    return SAFE_METHODS.has(request.method) || isSameOrigin(request);
  }
}
