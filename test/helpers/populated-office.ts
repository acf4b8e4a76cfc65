// An office's SQLite data dir with some of everything, made through the real APIs: fleets, an
// invitation and a code with their uses, devices enrolled by the device simulator over the real
// agent API and broker (one by invitation, one by code), a stored file and a package deployed to
// a fleet and downloaded by its devices, a policy, an admin account, an API token, and the audit
// trail all that leaves. The backend is stopped when it returns: the data dir is at rest. Its
// ports are kept, so that a server started again on them is the one the devices know.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../scripts/postgres.ts';
import { startDevice, type SimulatedDevice } from '../../src-main/device/device.ts';
import { startTestBackend } from './backend.ts';
import { eventually } from './mqtt.ts';

const APK = readFileSync(fileURLToPath(new URL('../fixtures/field-app.apk', import.meta.url)));

export interface OfficeDevice {
  email: string;
  agentId: number;
  serial: string;
  /** What the simulator kept of its enrollment (user token, session, MQTT login and password). */
  enrollment: SimulatedDevice['enrollment'];
}

/** The listeners' ports: a server started again on them is, to the devices, the same server. */
export interface OfficePorts {
  port: number;
  adminPort: number;
  mqttPort: number;
  mqttTlsPort: number;
}

export interface PopulatedOffice {
  dataDir: string;
  ports: OfficePorts;
  devices: OfficeDevice[];
  file: { id: number; sha256: string; bytes: Buffer };
  packageId: number;
}

export async function populateOffice(dataDir: string): Promise<PopulatedOffice> {
  const taken = new Set<number>();
  while (taken.size < 4) taken.add(await freePort());
  const [port, adminPort, mqttPort, mqttTlsPort] = [...taken] as [number, number, number, number];
  const ports: OfficePorts = { port, adminPort, mqttPort, mqttTlsPort };
  const t = await startTestBackend({ dataDir, ...ports });
  const devices: SimulatedDevice[] = [];
  try {
    const must = async (method: string, path: string, body?: unknown, status = 201) => {
      const answer = await t.admin(method, path, body);
      if (answer.status !== status) throw new Error(`${method} ${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
      return answer.body;
    };
    const upload = async (kind: 'files' | 'packages', name: string, bytes: Buffer) => {
      const response = await fetch(`${t.backend.info.admin_url}/api/${kind}?name=${encodeURIComponent(name)}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.backend.info.admin_token}`, 'content-type': 'application/octet-stream' },
        body: bytes,
      });
      if (response.status !== 201) throw new Error(`upload ${name}: ${response.status} ${await response.text()}`);
      return (await response.json()) as { id: number; sha256: string };
    };

    const fleet = await must('POST', '/fleets', { name: 'Warehouse' });
    await must('POST', '/fleets', { name: 'Front desk' });
    const office: OfficeDevice[] = [];
    const enroll = async (deeplink: string, email: string) => {
      const device = await startDevice({ deeplink, email, chunkSize: 4096, mqtt: { backoff: { initialMs: 100, maxMs: 1000 } } });
      devices.push(device);
      office.push({
        email,
        agentId: Number(device.enrollment.agentId),
        serial: device.enrollment.serial,
        enrollment: device.enrollment,
      });
    };
    // One device by invitation, one by an enrollment code (its use is logged).
    const invitation = await must('POST', '/invitations', { email: 'ana@example.com', fleet: 'Warehouse', send_email: false });
    await enroll(invitation.deeplink, 'ana@example.com');
    await must('POST', '/invitations', { email: 'pending@example.com', send_email: false });
    const code = await must('POST', '/codes', { name: 'Warehouse scanners', fleet: 'Warehouse', max_uses: 10 });
    await enroll(code.deeplink, 'bo@example.com');

    // A file and a package, deployed to the fleet and downloaded by both devices; a policy.
    const bytes = Buffer.from(`${'price list '.repeat(3000)}\n`);
    const file = await upload('files', 'prices.txt', bytes);
    const pkg = await upload('packages', 'field-app.apk', APK);
    const deployed = await must('POST', '/deployments', {
      kind: 'file',
      item_id: file.id,
      fleet_id: fleet.id,
      destination: '%SDCARD%/prices.txt',
    });
    await must('POST', '/policy-assignments', { policy: 'deployApp', value: pkg.id, fleet_id: fleet.id });
    await must('POST', '/policy-assignments', { policy: 'disableCamera', value: true, fleet: 'Warehouse' });
    await eventually(async () => {
      const d = await must('GET', `/deployments/${deployed.id}`, undefined, 200);
      return d.done === 2 && d.total === 2;
    }, 20_000);

    // People: an admin invited, an API token.
    await must('POST', '/accounts', { email: 'helpdesk@example.com', role: 'operator', no_email: true });
    await must('POST', '/tokens', { name: 'backup script', role: 'observer', days: 30 });
    return { dataDir, ports, devices: office, file: { ...file, bytes }, packageId: pkg.id };
  } finally {
    await Promise.all(devices.map((device) => device.stop()));
    await t.stop();
  }
}
