// Presence: is_online and last_contact follow connections, T/Status/Online, wills and drops, and
// every change reaches the admin event stream.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { withStoredAgents } from '../../helpers/stored-agents.ts';
import {
  agentRow,
  connectAgent,
  enrollAgent,
  eventually,
  mosquittoLogin,
  nextEvent,
  ofAgent,
  refusalCode,
  run,
  type EnrolledAgent,
  useBrokerBackend,
} from '../../helpers/mqtt.ts';

let t: TestBackend;

useBrokerBackend((backend) => {
  t = backend;
});

const willOf = (agent: EnrolledAgent) => ({
  topic: `${agent.topic}/Status/Online`,
  payload: Buffer.from('{"online":false}'),
  qos: 1 as const,
  retain: true,
});

describe('presence', () => {
  it('counts a mosquitto_sub client that never publishes Status/Online as online, and pings it', async () => {
    const agent = await enrollAgent(t);
    const seen: { online?: boolean; ping?: number } = {};
    // stdbuf: mosquitto_sub's debug lines arrive as written, so the checks run right after its CONNACK / SUBACK.
    // -R: not the retained Command/Subscribe every agent finds, the ping.
    const sub = ['mosquitto_sub', ...mosquittoLogin(t, agent), '-t', `${agent.topic}/#`, '-v', '-R', '-C', '1', '-W', '20', '-d'];
    let checking: Promise<void> | undefined;
    const result = await run('stdbuf', ['-oL', ...sub], {
      onStdout: (soFar) => {
        if (checking || !soFar.includes('received SUBACK')) return;
        checking = (async () => {
          seen.online = (await t.admin('GET', `/agents/${agent.id}`)).body.is_online;
          seen.ping = (await t.admin('POST', `/agents/${agent.id}/commands`, { command: 'ping' })).status;
        })();
      },
    });
    await checking;
    expect(seen).toEqual({ online: true, ping: 202 });
    expect(result.stdout).toContain(`${agent.topic}/Command/Ping {"query":"Ping"}`);
    expect(result.stdout).not.toContain("PUBLISH (d0, q0, r0, m0, '" + agent.topic + '/Status');
    await eventually(async () => (await agentRow(t, agent.id)).is_online === 0);
  });

  it('is online as soon as its CONNACK arrives, before any message', async () => {
    const agent = await enrollAgent(t);
    await connectAgent(t, agent);
    expect((await agentRow(t, agent.id)).is_online).toBe(1);
    expect((await t.admin('GET', `/agents/${agent.id}`)).body.is_online).toBe(true);
  });

  it('goes online on connect and offline on a clean disconnect, with last_contact', async () => {
    const agent = await enrollAgent(t);
    expect(await agentRow(t, agent.id)).toMatchObject({ is_online: 0, last_contact: null });
    const before = new Date().toISOString();
    const online = nextEvent(t, ofAgent(agent.id, 'agent.online'));
    const client = await connectAgent(t, agent);
    const event = await online;
    expect(event.data).toMatchObject({
      reason: 'connected',
      protocol: 'MQTT 3.1.1',
      tls: false,
      address: '127.0.0.1',
      client_id: agent.serial,
    });
    const row = await agentRow(t, agent.id);
    expect(row.is_online).toBe(1);
    expect(row.last_contact! >= before).toBe(true);
    expect((await t.admin('GET', `/agents/${agent.id}`)).body).toMatchObject({ is_online: true });

    const offline = nextEvent(t, ofAgent(agent.id, 'agent.offline'));
    const leftAt = new Date().toISOString();
    await client.endAsync();
    expect((await offline).data).toMatchObject({ reason: 'disconnected' });
    expect((await agentRow(t, agent.id)).is_online).toBe(0);
    expect((await agentRow(t, agent.id)).last_contact! >= leftAt).toBe(true);
  });

  it('keeps a connected agent online whatever it says on T/Status/Online (the broker knows)', async () => {
    const agent = await enrollAgent(t);
    const online = nextEvent(t, ofAgent(agent.id, 'agent.online'));
    const client = await connectAgent(t, agent);
    await online;
    const offline: string[] = [];
    const stop = t.backend.services.events.subscribe((e) => {
      if (ofAgent(agent.id, 'agent.offline')(e)) offline.push(e.message);
    });
    await client.publishAsync(`${agent.topic}/Status/Online`, '{"online":false}', { qos: 1 });
    await client.publishAsync(`${agent.topic}/Status/Online`, '{"online":true}', { qos: 1, retain: true });
    stop();
    expect(offline).toEqual([]);
    expect((await agentRow(t, agent.id)).is_online).toBe(1);
    expect((await t.admin('POST', `/agents/${agent.id}/commands`, { command: 'ping' })).status).toBe(202);
  });

  it('goes offline through the will when the connection drops', async () => {
    const agent = await enrollAgent(t);
    const online = nextEvent(t, ofAgent(agent.id, 'agent.online'));
    const client = await connectAgent(t, agent, { will: willOf(agent) });
    await online;
    const offline = nextEvent(t, ofAgent(agent.id, 'agent.offline'));
    client.stream.destroy(); // no DISCONNECT: the broker publishes the will
    expect((await offline).data).toMatchObject({ reason: 'will' });
    expect((await agentRow(t, agent.id)).is_online).toBe(0);
  });

  it('goes offline when a connection without a will drops', async () => {
    const agent = await enrollAgent(t);
    const online = nextEvent(t, ofAgent(agent.id, 'agent.online'));
    const client = await connectAgent(t, agent);
    await online;
    const offline = nextEvent(t, ofAgent(agent.id, 'agent.offline'));
    client.stream.destroy();
    expect((await offline).data).toMatchObject({ reason: 'disconnected' });
  });

  it('never takes a retained or late "online" of a disconnected agent for presence', async () => {
    const agent = await enrollAgent(t);
    const online = nextEvent(t, ofAgent(agent.id, 'agent.online'));
    const client = await connectAgent(t, agent);
    await online;
    await client.publishAsync(`${agent.topic}/Status/Online`, '{"online":true}', { qos: 1, retain: true });
    const offline = nextEvent(t, ofAgent(agent.id, 'agent.offline'));
    await client.endAsync(); // clean: no will replaces the retained {"online": true}
    await offline;
    // The broker replaced the stale retained message: what it keeps now says offline.
    expect(await eventually(async () => (await retainedOnline(agent)) === '{"online":false}')).toBe(true);
    expect((await agentRow(t, agent.id)).is_online).toBe(0);
  });

  it('counts connected agents in /api/status', async () => {
    const agent = await enrollAgent(t);
    const before = (await t.admin('GET', '/status')).body.mqtt.connected_agents as number;
    const online = nextEvent(t, ofAgent(agent.id, 'agent.online'));
    await connectAgent(t, agent);
    await online;
    const status = (await t.admin('GET', '/status')).body;
    expect(status.mqtt.connected_agents).toBe(before + 1);
    expect(status.counts.online).toBeGreaterThanOrEqual(1);
  });

  it('sends every presence change to the admin event stream (SSE), with the device row, as every event naming the agent', async () => {
    const agent = await enrollAgent(t);
    const controller = new AbortController();
    const response = await fetch(`${t.backend.info.admin_url}/api/events/stream`, {
      headers: { authorization: `Bearer ${t.backend.info.admin_token}` },
      signal: controller.signal,
    });
    const reader = response.body!.getReader();
    const seen: string[] = [];
    const rows: unknown[] = []; // the device-list row each event naming the agent carries
    const reading = (async () => {
      const decoder = new TextDecoder();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += decoder.decode(value, { stream: true });
        for (const match of buffer.matchAll(/event: (agent\.(?:online|offline)|mqtt\.login_refused)\ndata: (.*)\n/g)) {
          const event = JSON.parse(match[2]!);
          if (event.agent_id === agent.id && !seen.includes(`${match[1]}#${event.id}`)) {
            seen.push(`${match[1]}#${event.id}`);
            rows.push(event.agent);
          }
        }
        if (seen.length >= 3) return;
      }
    })();
    const client = await connectAgent(t, agent);
    await client.endAsync();
    await eventually(async () => expect((await agentRow(t, agent.id)).is_online).toBe(0));
    // Not an agent.* event, but it names the agent: the console updates the row from the frame too.
    expect(await refusalCode(t, { ...agent, password: 'wrong' })).not.toBe(0);
    await reading;
    controller.abort();
    expect(seen.map((s) => s.split('#')[0])).toEqual(['agent.online', 'agent.offline', 'mqtt.login_refused']);
    expect(rows).toMatchObject([
      { id: agent.id, is_online: true, last_contact: expect.any(String) },
      { id: agent.id, is_online: false },
      { id: agent.id, is_online: false },
    ]);
  });
});

describe('a backend that did not stop cleanly', () => {
  it('starts with every agent offline', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'mdm-presence-'));
    try {
      const first = await startTestBackend({ dataDir });
      const agent = await enrollAgent(first);
      await first.stop();
      // What a crash leaves behind: an agent still marked online.
      await withStoredAgents(dataDir, (agents) => agents.setPresence(agent.id, true, new Date().toISOString()));
      const second = await startTestBackend({ dataDir });
      try {
        expect((await agentRow(second, agent.id)).is_online).toBe(0);
        const started = (await second.backend.services.events.latest(20)).find((e) => e.type === 'broker.started');
        expect(started?.data).toMatchObject({ marked_offline: [agent.id] });
      } finally {
        await second.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

/** What the broker keeps retained on T/Status/Online, read in-process (agents may not read it). */
function retainedOnline(agent: EnrolledAgent): Promise<string | null> {
  return t.backend.broker.retained(`${agent.topic}/Status/Online`);
}
