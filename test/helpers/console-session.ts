// Calls as the console makes them: JSON posts from its own origin, and admin API calls carrying a
// console session's cookie or an API token. Over callFrom, so a test can pick the client's address.
import { callFrom, type Answer } from './from-address.ts';

/** A POST of `body` as JSON from the console's own origin (the sign-in routes refuse other sites). */
export const sameOriginJson = (body: unknown, extra: Record<string, string> = {}) => ({
  method: 'POST',
  headers: { 'sec-fetch-site': 'same-origin', 'content-type': 'application/json', ...extra },
  body: JSON.stringify(body),
});

/** The console session's cookie an answer sets, if any. */
export const sessionCookieOf = (answer: Answer) => /mdm_console=([^;]*)/.exec(String(answer.headers['set-cookie']))?.[1];

/** An admin API call (`/api` + path) with a console session's cookie, from the console's own origin. */
export const withSession = (adminUrl: string, cookie: string, method: string, path: string, body?: unknown) =>
  callFrom('127.0.0.1', `${adminUrl}/api${path}`, {
    method,
    headers: {
      cookie: `mdm_console=${cookie}`,
      'sec-fetch-site': 'same-origin',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

/** An admin API call (`/api` + path) with an API token as `Authorization: Bearer`. */
export const withBearer = (adminUrl: string, bearer: string, path: string, method = 'GET', body?: unknown) =>
  callFrom('127.0.0.1', `${adminUrl}/api${path}`, {
    method,
    headers: { authorization: `Bearer ${bearer}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
