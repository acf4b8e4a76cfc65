// Defects of the released Flyve agents seen on the wire, compensated by the server (issue 20, item 4):
// each over the real broker, agent API and SQLite file.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentCall, startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { closeClients, connectAgent, enrollAgent, inbox } from '../../helpers/mqtt.ts';

let t: TestBackend;

beforeAll(async () => {
  t = await startTestBackend();
});
afterAll(async () => {
  await closeClients();
  await t.stop();
});

async function upload(kind: 'files' | 'packages', name: string, bytes: Buffer, query = ''): Promise<any> {
  const response = await fetch(`${t.backend.info.admin_url}/api/${kind}?name=${encodeURIComponent(name)}${query}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.backend.info.admin_token}`, 'content-type': 'application/octet-stream' },
    body: bytes,
  });
  expect(response.status).toBe(201);
  return response.json();
}

async function fleet(name: string): Promise<{ id: number; entity_id: number }> {
  const { status, body } = await t.admin('POST', '/fleets', { name });
  expect(status).toBe(201);
  return body;
}

describe('download metadata', () => {
  it('carries dl_filename for packages only: the develop agent reads package_name whenever it is there', async () => {
    const agent = await enrollAgent(t);
    const file = await upload('files', 'notes.txt', Buffer.from('hello'));
    const pkg = await upload('packages', 'tool.bin', Buffer.from('not an apk'), '&package_name=org.example.tool&version_code=3');
    // Both names of the resource: the spec's and the Flyve agents'.
    for (const path of [`PluginMdmFile/${file.id}`, `PluginFlyvemdmFile/${file.id}`]) {
      const meta = await agentCall(t.apiUrl, 'GET', `${path}?session_token=${agent.session}`);
      expect(meta.status, path).toBe(200);
      expect(meta.body.name).toBe('notes.txt');
      expect(meta.body, path).not.toHaveProperty('dl_filename');
      expect(meta.body, path).not.toHaveProperty('package_name');
    }
    const meta = await agentCall(t.apiUrl, 'GET', `PluginFlyvemdmPackage/${pkg.id}?session_token=${agent.session}`);
    expect(meta.status).toBe(200);
    expect(meta.body).toMatchObject({ dl_filename: 'tool.bin', package_name: 'org.example.tool', version_code: 3 });
  });
});

describe('file destinations', () => {
  it('end in "/", stored and on the wire: the agents join folder and name with no separator', async () => {
    const { id: fleetId, entity_id: entityId } = await fleet('Destinations');
    const agent = await enrollAgent(t, { fleet: 'Destinations' });
    const client = await connectAgent(t, agent);
    const box = inbox(client);
    await client.subscribeAsync({ [`/${entityId}/fleet/${fleetId}/#`]: { qos: 1 } });
    const file = await upload('files', 'manual.pdf', Buffer.alloc(100, 1));

    for (const [given, stored] of [
      ['%SDCARD%/Docs', '%SDCARD%/Docs/'],
      ['%SDCARD%/Already/', '%SDCARD%/Already/'],
    ] as const) {
      const created = await t.admin('POST', '/deployments', {
        kind: 'file',
        item_id: file.id,
        fleet_id: fleetId,
        destination: given,
        remove_on_delete: true,
      });
      expect(created.status).toBe(201);
      expect(created.body.destination).toBe(stored);
      const message = await box.next(
        (m) => m.topic === `/${entityId}/fleet/${fleetId}/Policy/deployFile/Task/${created.body.id}`,
      );
      expect(JSON.parse(message.text)).toEqual({ deployFile: stored, id: file.id, version: 1, taskId: created.body.id });
      const row = t.db.prepare('SELECT destination, payload FROM deployments WHERE id = ?').get(created.body.id) as {
        destination: string;
        payload: string;
      };
      expect(row.destination).toBe(stored);
      expect(JSON.parse(row.payload).deployFile).toBe(stored);
      // Removing it removes the file the agent wrote: folder and name, one separator.
      const removed = await t.admin('DELETE', `/deployments/${created.body.id}`);
      expect(removed.body.removal.message.removeFile).toBe(`${stored}manual.pdf`);
      await t.admin('DELETE', `/deployments/${removed.body.removal.id}`);
    }
    await closeClients();
  });
});
