// The TLS listener: a certificate generated on first start and kept in the data dir, its SHA-256
// fingerprint in /api/status, agents sent to it when the mqtt_tls setting is on.
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generateSelfSigned } from '../../../src-main/backend/broker/tls-generate.ts';
import { startMqttAgent } from '../../../src-main/device/mqtt-agent.ts';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { closeClients, connectAgent, enrollAgent, mosquittoLogin, run, useBrokerBackend } from '../../helpers/mqtt.ts';

let t: TestBackend;
let certFile: string;

useBrokerBackend((backend) => {
  t = backend;
  certFile = join(t.dataDir, 'mqtt-tls', 'cert.pem');
});

describe('the generated certificate', () => {
  it('is kept in the data dir (key 0600) and its SHA-256 fingerprint is in /api/status and server.json', async () => {
    const pem = readFileSync(certFile, 'utf8');
    const cert = new X509Certificate(pem);
    expect(statSync(join(t.dataDir, 'mqtt-tls', 'key.pem')).mode & 0o777).toBe(0o600);
    expect(cert.subjectAltName).toContain('IP Address:127.0.0.1');
    expect(cert.subjectAltName).toContain('DNS:localhost');
    const status = await t.admin('GET', '/status');
    expect(status.body.mqtt).toMatchObject({
      port: t.backend.info.mqtt_port,
      tls_port: t.backend.info.mqtt_tls_port,
      tls: { fingerprint_sha256: cert.fingerprint256, source: 'generated' },
    });
    expect(status.body.mqtt.tls.fingerprint_sha256).toMatch(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
    const serverJson = JSON.parse(readFileSync(join(t.dataDir, 'server.json'), 'utf8'));
    expect(serverJson.mqtt_tls_port).toBe(t.backend.info.mqtt_tls_port);
    expect(serverJson.mqtt_tls_fingerprint).toBe(cert.fingerprint256);
  });

  it('is trusted by mqtt.js with it as CA, over MQTT 3.1.1 and 3.1', async () => {
    const agent = await enrollAgent(t);
    const ca = readFileSync(certFile);
    expect((await connectAgent(t, agent, { tls: true, ca })).connected).toBe(true);
    expect(
      (await connectAgent(t, agent, { tls: true, ca, protocolVersion: 3, protocolId: 'MQIsdp', clientId: 'tls31' })).connected,
    ).toBe(true);
  });

  it('is refused by a client that does not trust it', async () => {
    const agent = await enrollAgent(t);
    await expect(connectAgent(t, agent, { tls: true })).rejects.toThrow(/self[- ]signed/i);
  });

  it('works with mosquitto clients (--cafile), over 3.1.1 and 3.1', async () => {
    const agent = await enrollAgent(t);
    expect((await t.admin('POST', `/agents/${agent.id}/commands`, { command: 'wipe' })).status).toBe(202);
    for (const version of ['mqttv311', 'mqttv31']) {
      const result = await run('mosquitto_sub', [
        ...mosquittoLogin(t, agent, { cafile: certFile }),
        '-V',
        version,
        '-i',
        `tls-${version}`,
        '-t',
        `${agent.topic}/#`,
        '-v',
        '-C',
        '2',
        '-W',
        '15',
      ]);
      expect(result.stderr).toBe('');
      // Beside the retained Command/Subscribe every agent finds (its fleet topic).
      expect(result.stdout.trim().split('\n').sort()).toEqual([
        `${agent.topic}/Command/Subscribe {"subscribe":[{"topic":"/1/fleet/1"}]}`,
        `${agent.topic}/Command/Wipe {"wipe":"now"}`,
      ]);
    }
    const wrongCa = join(t.dataDir, 'other-ca.pem');
    writeFileSync(wrongCa, (await generateSelfSigned({ commonName: 'other', hosts: ['127.0.0.1'], days: 1 })).cert);
    const untrusted = await run('mosquitto_pub', [
      ...mosquittoLogin(t, agent, { cafile: wrongCa }),
      '-t',
      `${agent.topic}/Status/X`,
      '-m',
      'x',
    ]);
    expect(untrusted.code).not.toBe(0);
  });

  it('sends agents to the TLS port when the mqtt_tls setting is on, and the simulator pins the certificate', async () => {
    expect((await t.admin('PATCH', '/settings', { mqtt_tls: true })).status).toBe(200);
    try {
      const agent = await enrollAgent(t);
      expect(agent.record).toMatchObject({ tls: 1, port: t.backend.info.mqtt_tls_port, broker: '127.0.0.1' });
      const simulated = await startMqttAgent({
        host: agent.record.broker,
        port: agent.record.port,
        tls: true,
        username: agent.serial,
        password: agent.password,
        topic: agent.topic,
      });
      expect(simulated.state.fingerprint).toBe(t.backend.info.mqtt_tls_fingerprint);
      await simulated.stop();
      // A fingerprint given in advance that does not match: refused before any credential is sent.
      await expect(
        startMqttAgent({
          host: '127.0.0.1',
          port: agent.record.port,
          tls: true,
          username: agent.serial,
          password: agent.password,
          topic: agent.topic,
          fingerprint: 'AA'.repeat(32),
        }),
      ).rejects.toThrow(/not the expected one/);
    } finally {
      await t.admin('PATCH', '/settings', { mqtt_tls: false });
    }
  });
});

describe('certificates across restarts and provided by the admin', () => {
  it('keeps the same certificate when the backend starts again on the same data dir', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'mdm-tls-'));
    try {
      const first = await startTestBackend({ dataDir });
      const fingerprint = first.backend.info.mqtt_tls_fingerprint;
      await first.stop();
      const second = await startTestBackend({ dataDir });
      expect(second.backend.info.mqtt_tls_fingerprint).toBe(fingerprint);
      await second.stop();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it("serves the admin's own certificate, and refuses to start with a key that does not match it", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mdm-own-cert-'));
    try {
      const own = await generateSelfSigned({
        commonName: 'broker.example.org',
        hosts: ['broker.example.org', '127.0.0.1'],
        days: 30,
      });
      const other = await generateSelfSigned({ commonName: 'other', hosts: ['127.0.0.1'], days: 30 });
      writeFileSync(join(dir, 'cert.pem'), own.cert);
      writeFileSync(join(dir, 'key.pem'), own.key);
      writeFileSync(join(dir, 'other-key.pem'), other.key);
      const provided = await startTestBackend({ mqttTlsCertFile: join(dir, 'cert.pem'), mqttTlsKeyFile: join(dir, 'key.pem') });
      try {
        expect(provided.backend.info.mqtt_tls_fingerprint).toBe(new X509Certificate(own.cert).fingerprint256);
        expect((await provided.admin('GET', '/status')).body.mqtt.tls.source).toBe('provided');
        const agent = await enrollAgent(provided);
        expect((await connectAgent(provided, agent, { tls: true, ca: own.cert })).connected).toBe(true);
      } finally {
        await closeClients();
        await provided.stop();
      }
      await expect(
        startTestBackend({ mqttTlsCertFile: join(dir, 'cert.pem'), mqttTlsKeyFile: join(dir, 'other-key.pem') }),
      ).rejects.toThrow(/not the private key/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
