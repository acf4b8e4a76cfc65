// The admin API of a running `serve`, as the console and the CLI call it.
import type { ServerJson } from './process.ts';

export interface InvitationView {
  id: number;
  email: string;
  deeplink: string;
  status: string;
}

export async function adminCall<T>(server: ServerJson, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
  const response = await fetch(`${server.admin_url}/api${path}`, {
    method,
    headers: {
      authorization: `Bearer ${server.admin_token}`,
      ...(body === undefined || body instanceof Uint8Array ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    body: body === undefined ? undefined : body instanceof Uint8Array ? body : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: HTTP ${response.status} ${text.slice(0, 300)}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

/** Invitations in bulk (5,000 per request, the API's maximum), no email sent. */
export async function inviteMany(server: ServerJson, count: number, prefix: string): Promise<InvitationView[]> {
  const all: InvitationView[] = [];
  for (let start = 0; start < count; start += 5000) {
    const invitations = [];
    for (let i = start; i < Math.min(count, start + 5000); i++) invitations.push({ email: `${prefix}-${i}@bench.example` });
    const { items } = await adminCall<{ items: InvitationView[] }>(server, 'POST', '/invitations/bulk', { invitations, send_email: false });
    all.push(...items);
  }
  return all;
}
