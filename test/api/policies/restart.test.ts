// The embedded broker keeps retained messages in memory: after a server restart every active
// assignment (value policies, a device's own, deployments) is retained again, and an unset one is
// not. Real SQLite file kept across the restart, a real agent MQTT client reading what is retained.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { closeClients, connectAgent, enrollAgent, inbox } from '../../helpers/mqtt.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'mdm-policy-restart-'));
let t: TestBackend | null = null;
afterAll(async () => {
  await closeClients();
  await t?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('policies across a server restart (embedded broker)', () => {
  it('every active assignment is retained again; an unset one is not', async () => {
    t = await startTestBackend({ dataDir });
    const fleetId = (await t.admin('POST', '/fleets', { name: 'Restarted' })).body.id as number;
    const agent = await enrollAgent(t, { fleet: 'Restarted' });
    const set = async (body: Record<string, unknown>) => {
      const { status, body: created } = await t!.admin('POST', '/policy-assignments', body);
      expect(status, JSON.stringify(created)).toBe(201);
      return created as { id: number; topic: string; message: unknown };
    };
    const camera = await set({ policy: 'disableCamera', value: true, fleet_id: fleetId });
    const lock = await set({ policy: 'maximumTimeToLock', value: 30_000, fleet_id: fleetId });
    const own = await set({ policy: 'passwordMinLength', value: 8, agent_id: agent.id });
    const removal = await set({ policy: 'removeApp', value: 'org.example.old', fleet_id: fleetId });
    expect((await t.admin('DELETE', `/policy-assignments/${lock.id}`)).status).toBe(200);
    await t.stop();
    t = null;

    t = await startTestBackend({ dataDir });
    for (const kept of [camera, own, removal])
      expect(await t.backend.broker.retained(kept.topic)).toBe(JSON.stringify(kept.message));
    expect(await t.backend.broker.retained(lock.topic)).toBeNull();
    const client = await connectAgent(t, agent);
    const box = inbox(client);
    await client.subscribeAsync([`${agent.topic}/#`, `/1/fleet/${fleetId}/#`], { qos: 1 });
    for (const kept of [camera, own, removal]) {
      const message = await box.next((m) => m.topic === kept.topic);
      expect([message.text, message.retain]).toEqual([JSON.stringify(kept.message), true]);
    }
    expect(box.messages.filter((m) => m.topic === lock.topic)).toEqual([]);
  });
});
