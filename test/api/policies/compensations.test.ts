// Defects of the released Flyve agents seen on the wire, compensated by the server (issue 20, item 4):
// each over the real broker, agent API and SQLite file.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentCall, startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { closeClients, connectAgent, enrollAgent, eventually, inbox } from '../../helpers/mqtt.ts';

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
      const row = t.db.prepare('SELECT destination, payload FROM policy_assignments WHERE id = ?').get(created.body.id) as {
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

describe('a deployed item downloaded completely but never confirmed', () => {
  it('reads "downloaded, not confirmed" instead of pending until the device reports', async () => {
    const { id: fleetId } = await fleet('Silent downloaders');
    const agent = await enrollAgent(t, { fleet: 'Silent downloaders' });
    const other = await enrollAgent(t, { fleet: 'Silent downloaders' });
    const content = Buffer.alloc(10_000, 3);
    const file = await upload('files', 'big.bin', content);
    const created = await t.admin('POST', '/deployments', { kind: 'file', item_id: file.id, fleet_id: fleetId });
    expect(created.status).toBe(201);
    // The device's own session, as the agents open it from their api_token.
    const own = await agentCall(t.apiUrl, 'GET', `initSession?user_token=${agent.record.api_token}`);
    expect(own.status).toBe(200);
    const session = own.body.session_token as string;
    const get = (headers: Record<string, string>) =>
      fetch(`${t.apiUrl}/PluginFlyvemdmFile/${file.id}?session_token=${session}`, {
        headers: { accept: 'application/octet-stream', ...headers },
      });
    const taskOf = async (agentId: number) => {
      const detail = await t.admin('GET', `/deployments/${created.body.id}`);
      return detail.body.tasks.find((task: any) => task.agent_id === agentId);
    };

    // The metadata, a HEAD and a first part are no download of the whole.
    await agentCall(t.apiUrl, 'GET', `PluginMdmFile/${file.id}?session_token=${session}`);
    expect(
      (
        await fetch(`${t.apiUrl}/PluginMdmFile/${file.id}?session_token=${session}`, {
          method: 'HEAD',
          headers: { accept: 'application/octet-stream' },
        })
      ).status,
    ).toBe(200);
    const part = await get({ range: 'bytes=0-4999' });
    expect(part.status).toBe(206);
    await part.arrayBuffer();
    expect(await taskOf(agent.id)).toMatchObject({ status: 'pending', downloaded_at: null, status_text: 'pending' });

    // The rest, through the last byte: downloaded.
    const rest = await get({ range: 'bytes=5000-' });
    expect(rest.status).toBe(206);
    expect(Buffer.from(await rest.arrayBuffer()).equals(content.subarray(5000))).toBe(true);
    const downloaded = await eventually(async () => {
      const task = await taskOf(agent.id);
      return task.downloaded_at ? task : false;
    });
    expect(downloaded).toMatchObject({ status: 'pending', status_text: 'downloaded, not confirmed' });
    const row = t.db.prepare('SELECT downloaded_at FROM policy_tasks WHERE id = ?').get(downloaded.id) as {
      downloaded_at: string;
    };
    expect(row.downloaded_at).toBe(downloaded.downloaded_at);
    // The device's own task list says it too; the other device's task is untouched.
    const listed = await t.admin('GET', `/agents/${agent.id}/tasks`);
    expect(listed.body.items.find((task: any) => task.id === downloaded.id).status_text).toBe('downloaded, not confirmed');
    expect(await taskOf(other.id)).toMatchObject({ status: 'pending', downloaded_at: null, status_text: 'pending' });

    // Once it reports, its report is what shows.
    const reported = await agentCall(
      t.apiUrl,
      'GET',
      `search/PluginFlyvemdmTaskstatus/?criteria[0][field]=5&criteria[0][value]=${agent.id}&criteria[1][field]=6&criteria[1][value]=${created.body.id}&forcedisplay=2&session_token=${session}`,
    );
    const statusId = reported.body.data[0]['2'];
    const put = await agentCall(t.apiUrl, 'PUT', `PluginFlyvemdmTaskstatus/${statusId}?session_token=${session}`, {
      body: { input: { status: 'done' } },
    });
    expect(put.status).toBe(200);
    expect(await taskOf(agent.id)).toMatchObject({ status: 'done', status_text: 'done' });
  });
});
