// One mechanism for every policy: the four deployment kinds are assigned through
// POST /api/policy-assignments like the value policies, and /api/deployments is an alias onto the
// same code. Over the real broker (an agent's MQTT client reads the retained messages), admin API
// and SQLite file.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { closeClients, connectAgent, enrollAgent, inbox, type EnrolledAgent } from '../../helpers/mqtt.ts';

const APK = readFileSync(fileURLToPath(new URL('../../fixtures/field-app.apk', import.meta.url)));

let t: TestBackend;
beforeAll(async () => {
  t = await startTestBackend();
});
afterAll(async () => {
  await closeClients();
  await t.stop();
});

async function fleet(name: string): Promise<{ id: number; topic: string }> {
  const { status, body } = await t.admin('POST', '/fleets', { name });
  expect(status).toBe(201);
  return { id: body.id, topic: `/1/fleet/${body.id}` };
}

async function listening(agent: EnrolledAgent, fleetTopic: string) {
  const client = await connectAgent(t, agent);
  const box = inbox(client);
  await client.subscribeAsync([`${agent.topic}/#`, `${fleetTopic}/#`], { qos: 1 });
  return box;
}

async function upload(kind: 'packages' | 'files', name: string, body: Buffer): Promise<number> {
  const response = await fetch(`${t.backend.info.admin_url}/api/${kind}?name=${name}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.backend.info.admin_token}`, 'content-type': 'application/octet-stream' },
    body,
  });
  expect(response.status).toBe(201);
  return ((await response.json()) as { id: number }).id;
}

const assign = (body: Record<string, unknown>) => t.admin('POST', '/policy-assignments', body);

describe('the deployment kinds as assignments', () => {
  it('deployApp through POST /api/policy-assignments is what POST /api/deployments does: one row, one message, one rule', async () => {
    const f = await fleet('One way');
    const agent = await enrollAgent(t, { fleet: 'One way' });
    const box = await listening(agent, f.topic);
    const packageId = await upload('packages', 'field-app.apk', APK);

    const created = await assign({ policy: 'deployApp', value: packageId, fleet: 'One way', remove_on_delete: true });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({
      policy: 'deployApp',
      value: null,
      item_kind: 'package',
      item_id: packageId,
      item_name: 'field-app.apk',
      remove_on_delete: true,
      total: 1,
      topic: `${f.topic}/Policy/deployApp/Task/${created.body.id}`,
    });
    const message = await box.next((m) => m.topic === created.body.topic);
    expect(message.text).toBe(
      `{"deployApp":"org.example.fieldapp","id":${packageId},"versionCode":42,"taskId":${created.body.id}}`,
    );
    // The alias sees it, and its own create is refused by the same unicity rule.
    const listed = (await t.admin('GET', `/deployments?fleet_id=${f.id}`)).body.items as { id: number }[];
    expect(listed.map((d) => d.id)).toEqual([created.body.id]);
    const again = await t.admin('POST', '/deployments', { kind: 'package', item_id: packageId, fleet_id: f.id });
    expect([again.status, again.body.error]).toEqual([409, 'ERROR_ALREADY_DEPLOYED']);
    // The alias keeps what it always took: a package's destination is ignored there, as before.
    const other = await fleet('One way too');
    const withDestination = await t.admin('POST', '/deployments', {
      kind: 'package',
      item_id: packageId,
      fleet_id: other.id,
      destination: '/sdcard/x',
    });
    expect([withDestination.status, withDestination.body.destination]).toEqual([201, null]);
    expect((await t.admin('GET', `/deployments/${created.body.id}`)).body).toEqual(
      (await t.admin('GET', `/policy-assignments/${created.body.id}`)).body,
    );

    // Unset: the retained message cleared, and (remove_on_delete) the removal published.
    const unset = await t.admin('DELETE', `/policy-assignments/${created.body.id}`);
    expect(unset.status).toBe(200);
    expect(unset.body.removal).toMatchObject({ policy: 'removeApp', total: 1 });
    expect((await box.next((m) => m.topic === created.body.topic && m.text === '')).retain).toBe(false);
    const removal = await box.next((m) => m.topic === unset.body.removal.topic);
    expect(removal.text).toBe(`{"removeApp":"org.example.fieldapp","taskId":${unset.body.removal.id}}`);
  });

  it('removeApp and removeFile set directly: the reference message, unicity, and the deploy/remove conflict both ways', async () => {
    const f = await fleet('Removals');
    const agent = await enrollAgent(t, { fleet: 'Removals' });
    const box = await listening(agent, f.topic);
    const packageId = await upload('packages', 'field-app-2.apk', APK);

    const removal = await assign({ policy: 'removeApp', value: 'org.example.fieldapp', fleet_id: f.id });
    expect(removal.status, JSON.stringify(removal.body)).toBe(201);
    expect(removal.body).toMatchObject({ policy: 'removeApp', item_name: 'org.example.fieldapp', total: 1, pending: 1 });
    expect((await box.next((m) => m.topic === removal.body.topic)).text).toBe(
      `{"removeApp":"org.example.fieldapp","taskId":${removal.body.id}}`,
    );
    expect(await t.backend.broker.retained(removal.body.topic)).toBe(JSON.stringify(removal.body.message));

    const twice = await assign({ policy: 'removeApp', value: 'org.example.fieldapp', fleet: 'Removals' });
    expect(twice.status).toBe(409);
    expect(twice.body).toEqual({
      error: 'ERROR_POLICY_ALREADY_SET',
      message: `removeApp "org.example.fieldapp" is already in force on fleet "Removals" (assignment #${removal.body.id}): unset it first`,
    });
    // Deploying the app it removes is refused, by either path, naming the removal.
    for (const refused of [
      await assign({ policy: 'deployApp', value: packageId, fleet_id: f.id }),
      await t.admin('POST', '/deployments', { kind: 'package', item_id: packageId, fleet_id: f.id }),
    ]) {
      expect(refused.status).toBe(409);
      expect(refused.body).toEqual({
        error: 'ERROR_POLICY_CONFLICT',
        message: `removeApp "org.example.fieldapp" is in force on fleet "Removals" (assignment #${removal.body.id}): remove it first (DELETE /api/policy-assignments/${removal.body.id})`,
      });
    }
    // Unset through the alias: the same code clears the retained removal.
    expect((await t.admin('DELETE', `/deployments/${removal.body.id}`)).status).toBe(200);
    await box.next((m) => m.topic === removal.body.topic && m.text === '');
    expect(await t.backend.broker.retained(removal.body.topic)).toBeNull();

    // The other way round: a removal refused while the deployment it would undo is in force.
    const deployed = await assign({ policy: 'deployApp', value: packageId, fleet_id: f.id });
    expect(deployed.status).toBe(201);
    const undo = await assign({ policy: 'removeApp', value: 'org.example.fieldapp', fleet_id: f.id });
    expect(undo.status).toBe(409);
    expect(undo.body.message).toBe(
      `deployApp "field-app-2.apk" is in force on fleet "Removals" (assignment #${deployed.body.id}): remove it first (DELETE /api/policy-assignments/${deployed.body.id})`,
    );

    // Files, on one device: removeFile names the deployed file's path (folder + name).
    const fileId = await upload('files', 'notes.txt', Buffer.from('hello'));
    const file = await assign({ policy: 'deployFile', value: fileId, agent_id: agent.id, destination: '%SDCARD%/Docs' });
    expect(file.status).toBe(201);
    expect(file.body.message).toEqual({ deployFile: '%SDCARD%/Docs/', id: fileId, version: 1, taskId: file.body.id });
    const fileConflict = await assign({ policy: 'removeFile', value: '%SDCARD%/Docs/notes.txt', agent_id: agent.id });
    expect([fileConflict.status, fileConflict.body.error]).toEqual([409, 'ERROR_POLICY_CONFLICT']);
    const elsewhere = await assign({ policy: 'removeFile', value: '%SDCARD%/Other/notes.txt', agent_id: agent.id });
    expect(elsewhere.status).toBe(201);
    expect((await box.next((m) => m.topic === elsewhere.body.topic)).text).toBe(
      `{"removeFile":"%SDCARD%/Other/notes.txt","taskId":${elsewhere.body.id}}`,
    );
  });

  it('refuses what a policy does not take, with a clear 400 or 404', async () => {
    const f = await fleet('Refusals');
    const fileId = await upload('files', 'r.txt', Buffer.from('r'));
    for (const [body, status, message] of [
      [{ policy: 'deployApp', value: 'org.x', fleet_id: f.id }, 400, /deployApp: expected package id/],
      [{ policy: 'deployFile', value: 0, fleet_id: f.id }, 400, /deployFile: expected file id/],
      [{ policy: 'removeApp', value: '', fleet_id: f.id }, 400, /removeApp: expected Android package name/],
      [{ policy: 'removeApp', value: ' \n', fleet_id: f.id }, 400, /removeApp: expected an Android package name/],
      [{ policy: 'removeFile', value: 3, fleet_id: f.id }, 400, /removeFile: expected path on the device/],
      [{ policy: 'deployApp', value: 999_999, fleet_id: f.id }, 404, /Package #999999 not found/],
      [{ policy: 'deployApp', value: 1, fleet_id: f.id, destination: '/x/' }, 400, /destination is for deployFile only/],
      [{ policy: 'disableCamera', value: true, fleet_id: f.id, remove_on_delete: true }, 400, /remove_on_delete is for/],
      [{ policy: 'deployFile', value: fileId, fleet_id: f.id, destination: 'a\u0001b' }, 400, /folder path on the device/],
      [{ policy: 'removeApp', value: 'org.x' }, 400, /exactly one target/],
    ] as const) {
      const refused = await assign(body);
      expect(refused.status, JSON.stringify(body)).toBe(status);
      expect(refused.body.message).toMatch(message);
    }
    expect((await t.admin('GET', `/policy-assignments?fleet_id=${f.id}`)).body.items).toEqual([]);
  });
});
