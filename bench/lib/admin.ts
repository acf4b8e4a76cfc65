// The admin API of a running `serve`, through the client the console and the CLI use.
import { adminClient, type AdminClient } from '../../src-shared/contract/admin-client.ts';
import { BULK_MAX, type Invitation } from '../../src-shared/contract/invitations.ts';
import type { ServerJson } from './process.ts';

export function adminOf(server: Pick<ServerJson, 'admin_url' | 'admin_token'>): AdminClient {
  return adminClient({ baseUrl: server.admin_url, token: server.admin_token });
}

/** Invitations in bulk (the API's maximum per request), no email sent. */
export async function inviteMany(
  server: Pick<ServerJson, 'admin_url' | 'admin_token'>,
  count: number,
  prefix: string,
): Promise<Invitation[]> {
  const admin = adminOf(server);
  const all: Invitation[] = [];
  for (let start = 0; start < count; start += BULK_MAX) {
    const invitations = [];
    for (let i = start; i < Math.min(count, start + BULK_MAX); i++) invitations.push({ email: `${prefix}-${i}@bench.example` });
    const { items } = await admin.invitations.createMany({ body: { invitations, send_email: false } });
    all.push(...items);
  }
  return all;
}
