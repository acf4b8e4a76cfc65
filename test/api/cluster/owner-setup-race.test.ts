// Two nodes on one PostgreSQL database finishing the owner's first set-up at the same moment, each
// with its own set-up link (every node prints one): one wins, the other is told the set-up is done
// (410), and the owner keeps the winner's email and password. Before, both passed the "needs
// set-up" check and the second overwrote the first's credentials. (On main the transactions are
// serialized by an advisory lock, so the in-transaction check already saw the winner; the statement
// that sets the credentials is now guarded itself, which the second test checks directly: it does
// not depend on that lock.)
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SqliteAccountRepository } from '../../../src-main/backend/accounts/repository.ts';
import type { TestBackend } from '../../helpers/backend.ts';
import { sameOriginJson } from '../../helpers/console-session.ts';
import { callFrom } from '../../helpers/from-address.ts';
import { startNodes } from '../../helpers/nodes.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/postgres.ts';

let database: TestDatabase;
const nodes: TestBackend[] = [];

beforeAll(async () => {
  database = await createTestDatabase('setup_race');
  nodes.push(...(await startNodes(2, { databaseUrl: database.url, ownerName: 'ana' })));
}, 120_000);
afterAll(async () => {
  for (const node of nodes) await node.stop();
  await database?.drop();
});

it('two set-ups at once on two nodes: one sets the owner, the other gets 410 and changes nothing', async () => {
  const tokenOf = (node: TestBackend) => new URL(node.backend.info.setup_url!).searchParams.get('token')!;
  const setUp = (node: TestBackend, email: string, password: string) =>
    callFrom(
      '127.0.0.1',
      `${node.backend.info.admin_url}/auth/setup`,
      sameOriginJson({ token: tokenOf(node), email, display_name: email, password }),
    );
  const [a, b] = await Promise.all([
    setUp(nodes[0]!, 'first@example.org', 'first owner password'),
    setUp(nodes[1]!, 'second@example.org', 'second owner password'),
  ]);
  const statuses = [a.status, b.status].sort();
  expect(statuses).toEqual([200, 410]);
  const loser = a.status === 410 ? a : b;
  expect(loser.body.error).toBe('ERROR_SETUP_USED');
  const winner = a.status === 200 ? 'first' : 'second';
  const owner = await nodes[0]!.sql.get<{ email: string }>(`SELECT email FROM admin_accounts WHERE role = 'owner'`);
  expect(owner!.email).toBe(`${winner}@example.org`);
  // The winner's password signs in, on either node; the loser's does not.
  for (const node of nodes) {
    const signIn = (email: string, password: string) =>
      callFrom('127.0.0.1', `${node.backend.info.admin_url}/auth/password`, sameOriginJson({ email, password }));
    expect((await signIn(`${winner}@example.org`, `${winner} owner password`)).status).toBe(200);
  }
});

it("the statement that sets the owner's credentials changes nothing once the owner has a password", async () => {
  const accounts = new SqliteAccountRepository(nodes[1]!.sql);
  const owner = (await accounts.owner())!;
  expect(owner.password_hash).not.toBeNull();
  const set = await accounts.setCredentials(owner.id, { email: 'late@example.org', display_name: 'Late', password_hash: 'x' });
  expect(set).toBe(false);
  const after = (await accounts.owner())!;
  expect([after.email, after.password_hash]).toEqual([owner.email, owner.password_hash]);
});
