// Device isolation (issue 11, items 1, 2 and 6): MQTT logins unique whatever identifier they come
// from, a used QR code's user token yields no secrets, a session reads only its own agent's items.
// Real HTTP and a real broker, with mqtt.js clients.
import { describe, expect, it } from 'vitest';
import { agentCall, enrollByHand, type TestBackend } from '../../helpers/backend.ts';
import {
  agentRow,
  connectAgent,
  enrollAgent,
  inbox,
  notFleetAnnouncement,
  readRecord,
  refusalCode,
  useBrokerBackend,
} from '../../helpers/mqtt.ts';
import { repositoriesOf } from '../../helpers/repositories.ts';

let t: TestBackend;

useBrokerBackend((backend) => {
  t = backend;
});

let people = 0;
async function invite(options: { email?: string; fleet?: string } = {}) {
  people += 1;
  const email = options.email ?? `iso${people}-${process.pid}@example.com`;
  const invited = await t.admin('POST', '/invitations', { email, fleet: options.fleet, send_email: false });
  expect(invited.status).toBe(201);
  return { ...invited.body, email } as { id: number; user_token: string; invitation_token: string; email: string };
}

/** A session of `userToken` switched to the guest profile, as an agent opens it. */
async function guestSession(userToken: string): Promise<string> {
  const init = await agentCall(t.apiUrl, 'GET', `initSession?user_token=${userToken}`);
  expect(init.status).toBe(200);
  const session = init.body.session_token as string;
  const full = await agentCall(t.apiUrl, 'GET', `getFullSession?session_token=${session}`);
  const changed = await agentCall(
    t.apiUrl,
    'POST',
    `changeActiveProfile?session_token=${session}&profiles_id=${full.body.plugin_mdm_guest_profiles_id}`,
  );
  expect(changed.status).toBe(200);
  return session;
}

async function apiSession(apiToken: string): Promise<string> {
  const init = await agentCall(t.apiUrl, 'GET', `initSession?user_token=${apiToken}`);
  expect(init.status).toBe(200);
  return init.body.session_token as string;
}

const refusalsOf = async (invitationId: number) =>
  (
    (await t.admin('GET', `/invitations/${invitationId}`)).body.log as { outcome: string; code: string; message: string }[]
  ).filter((l) => l.outcome === 'refused');

describe('MQTT logins are unique across serials and uuids', () => {
  it("refuses a serial equal to another device's uuid login, logs it, and a wipe to U never reaches V", async () => {
    const shared = `SHARED-ID-${process.pid}-1`;
    // U: uuid only, so its login and topic come from its uuid.
    const u = await invite();
    const uEnrolled = await enrollByHand(t.apiUrl, u, { serial: '', uuid: shared });
    expect(uEnrolled.created.status).toBe(201);
    const uRecord = await readRecord(t, uEnrolled.session, Number(uEnrolled.created.body.id));
    expect(uRecord.topic).toBe(`/1/agent/${shared}`);

    // V, another person, quotes U's uuid as its serial: refused, written to V's invitation log.
    const v = await invite();
    const vRefused = await enrollByHand(t.apiUrl, v, { serial: shared, uuid: crypto.randomUUID() });
    expect(vRefused.created.status).toBe(400);
    expect(vRefused.created.body[0]).toBe('ERROR_CORE_ADD');
    expect(vRefused.created.body[1]).toContain(`Another device already uses ${shared} as its MQTT login`);
    expect((await refusalsOf(v.id)).map((l) => [l.code, l.message])).toEqual([['ERROR_CORE_ADD', vRefused.created.body[1]]]);

    // V enrolls with its own serial instead (the invitation was not consumed by the refusal).
    const vSerial = `V-OWN-${process.pid}`;
    const vEnrolled = await enrollByHand(t.apiUrl, v, { serial: vSerial });
    expect(vEnrolled.created.status).toBe(201);
    const vRecord = await readRecord(t, vEnrolled.session, Number(vEnrolled.created.body.id));

    // Both on the broker, each subscribed to its own topic as agents do.
    const uClient = await connectAgent(t, { serial: shared, password: uRecord.password });
    const vClient = await connectAgent(t, { serial: vSerial, password: vRecord.password });
    const uBox = inbox(uClient);
    const vBox = inbox(vClient);
    await uClient.subscribeAsync(`${uRecord.topic}/#`, { qos: 1 });
    await vClient.subscribeAsync(`${vRecord.topic}/#`, { qos: 1 });
    expect((await t.admin('POST', `/agents/${uRecord.id}/commands`, { command: 'wipe' })).status).toBe(202);
    await uBox.next((m) => m.topic === `${uRecord.topic}/Command/Wipe`);
    // A later message to V arrives after anything U's wipe could have brought it.
    expect((await t.admin('POST', `/agents/${vRecord.id}/commands`, { command: 'ping' })).status).toBe(202);
    await vBox.next((m) => m.topic === `${vRecord.topic}/Command/Ping`);
    expect(vBox.messages.filter(notFleetAnnouncement).map((m) => m.topic)).toEqual([`${vRecord.topic}/Command/Ping`]);
    expect((await agentRow(t, vRecord.id)).wipe).toBe(0);
  });

  it("refuses a uuid-only device whose uuid is another device's serial", async () => {
    const shared = `SHARED-ID-${process.pid}-2`;
    const first = await enrollAgent(t, { serial: shared });
    const u = await invite();
    const refused = await enrollByHand(t.apiUrl, u, { serial: '', uuid: shared });
    expect(refused.created.status).toBe(400);
    expect(refused.created.body).toEqual([
      'ERROR_CORE_ADD',
      expect.stringContaining(`Another device already uses ${shared} as its MQTT login`),
    ]);
    expect(await refusalsOf(u.id)).toHaveLength(1);
    // The first device is untouched: same login, same password.
    expect((await connectAgent(t, first)).connected).toBe(true);
    const logins = await t.backend.services.brokerAgents.byLogin(shared);
    expect(logins).toHaveLength(1);
  });

  it('still gives a re-enrolling device (same uuid, fresh invitation) its existing records', async () => {
    const uuid = `UUID-ONLY-${process.pid}-3`;
    const first = await invite();
    const enrolled = await enrollByHand(t.apiUrl, first, { serial: '', uuid });
    expect(enrolled.created.status).toBe(201);
    const again = await invite({ email: first.email });
    const second = await enrollByHand(t.apiUrl, again, { serial: '', uuid });
    expect(second.created.status).toBe(201);
    expect(second.created.body.id).toBe(enrolled.created.body.id);
    const record = await readRecord(t, second.session, Number(second.created.body.id));
    expect(record.topic).toBe(`/1/agent/${uuid}`);
    expect((await connectAgent(t, { serial: uuid, password: record.password })).connected).toBe(true);
  });
});

describe("a used invitation's QR code", () => {
  it('no longer yields the api_token or the mqttpasswd, and never rotates them', async () => {
    const invitation = await invite();
    const serial = `OLDQR${process.pid}`;
    const enrolled = await enrollByHand(t.apiUrl, invitation, { serial });
    const id = Number(enrolled.created.body.id);
    const record = await readRecord(t, enrolled.session, id);
    const hashBefore = (await agentRow(t, id)).mqtt_password_hash;
    const device = await connectAgent(t, { serial, password: record.password });

    // Whoever holds the printed code: a session still opens, but reads nothing of the device.
    const session = await guestSession(invitation.user_token);
    const read = await agentCall(t.apiUrl, 'GET', `PluginMdmAgent/${id}?session_token=${session}`);
    expect(read.status).toBe(404);
    expect(read.body).toEqual(['ERROR_ITEM_NOT_FOUND', 'Item not found']);
    expect(JSON.stringify(read.body)).not.toContain(record.record.api_token);
    for (const link of record.record.links as { href: string }[]) {
      const linked = await agentCall(t.apiUrl, 'GET', `${link.href.slice(t.apiUrl.length + 1)}?session_token=${session}`);
      expect(linked.status).toBe(404);
    }
    // Enrolling again with the used invitation is refused, and logged.
    const retry = await agentCall(t.apiUrl, 'POST', `PluginMdmAgent?session_token=${session}`, {
      body: {
        input: {
          _email: invitation.email,
          _invitation_token: invitation.invitation_token,
          _serial: serial,
          _uuid: '',
          csr: '',
          version: '1.0.0',
          type: 'android',
        },
      },
    });
    expect(retry.body).toEqual(['ERROR_CORE_ADD', 'This invitation has already been used']);

    // Nothing rotated: the same hash, the device stays connected and can log in again, its api_token works.
    const hashAfter = (await agentRow(t, id)).mqtt_password_hash;
    expect(hashAfter).toBe(hashBefore);
    expect(device.connected).toBe(true);
    expect(await refusalCode(t, { serial, password: record.password })).toBe(0);
    const own = await apiSession(record.record.api_token);
    expect((await agentCall(t.apiUrl, 'GET', `PluginMdmAgent/${id}?session_token=${own}`)).status).toBe(200);
  });

  it('leaves the enrolling session only a short window to read the record', async () => {
    const invitation = await invite();
    const enrolled = await enrollByHand(t.apiUrl, invitation, {});
    const id = Number(enrolled.created.body.id);
    expect((await agentCall(t.apiUrl, 'GET', `PluginMdmAgent/${id}?session_token=${enrolled.session}`)).status).toBe(200);
    // The same session, 16 minutes later (ENROLLMENT_READ_WINDOW_MS is 15).
    await repositoriesOf(t).sessions.bindEnrollment(enrolled.session, id, new Date(Date.now() - 16 * 60_000).toISOString());
    expect((await agentCall(t.apiUrl, 'GET', `PluginMdmAgent/${id}?session_token=${enrolled.session}`)).status).toBe(404);
  });

  it('stops logging refusals of a replayed QR code after 20 attempts a person (429)', async () => {
    const invitation = await invite();
    const { session, created } = await enrollByHand(t.apiUrl, invitation, {});
    expect(created.status).toBe(201);
    const replay = () =>
      agentCall(t.apiUrl, 'POST', `PluginMdmAgent?session_token=${session}`, {
        body: {
          input: {
            _email: invitation.email,
            _invitation_token: invitation.invitation_token,
            _serial: 'X1',
            csr: '',
            version: '1.0.0',
            type: 'android',
          },
        },
      });
    const statuses: number[] = [];
    for (let i = 0; i < 21; i++) statuses.push((await replay()).status);
    expect(statuses).toEqual([...Array(19).fill(400), 429, 429]);
    const last = await replay();
    expect(last.body).toEqual([
      'ERROR_TOO_MANY_REQUESTS',
      expect.stringMatching(/^Too many enrollment attempts; retry in \d+ s$/),
    ]);
    const log = (await t.admin('GET', `/invitations/${invitation.id}`)).body.log as { outcome: string }[];
    expect(log.filter((l) => l.outcome === 'refused')).toHaveLength(19);
  });
});

describe('a session reads only its own agent, computer, entity and fleet', () => {
  it("answers 404 for another device's records, to enrolled agents and to a pending invitee alike", async () => {
    const fleet = `Isolated ${process.pid}`;
    expect((await t.admin('POST', '/fleets', { name: fleet })).status).toBe(201);
    const a = await enrollAgent(t);
    const b = await enrollAgent(t, { fleet });
    const aSession = await apiSession(a.record.api_token);
    const bComputer = b.record.computers_id as number;
    const bFleet = b.record.plugin_mdm_fleets_id as number;
    expect(bFleet).not.toBe(a.record.plugin_mdm_fleets_id);

    // Its own: every link of its record answers.
    for (const link of a.record.links as { href: string }[]) {
      const own = await agentCall(t.apiUrl, 'GET', `${link.href.slice(t.apiUrl.length + 1)}?session_token=${aSession}`);
      expect(own.status).toBe(200);
    }
    expect((await agentCall(t.apiUrl, 'GET', `Computer/${a.record.computers_id}?session_token=${aSession}`)).body.serial).toBe(
      a.serial,
    );

    // Another's: nothing, and none of its identifiers.
    const pending = await invite();
    const invitee = await guestSession(pending.user_token);
    for (const session of [aSession, invitee]) {
      for (const path of [`Computer/${bComputer}`, `PluginMdmFleet/${bFleet}`, `PluginMdmAgent/${b.id}`]) {
        const other = await agentCall(t.apiUrl, 'GET', `${path}?session_token=${session}`);
        expect(other.status, path).toBe(404);
        expect(JSON.stringify(other.body)).not.toContain(b.serial);
      }
    }
    // The invitee has no agent yet: not even the entity or a computer of its own.
    expect((await agentCall(t.apiUrl, 'GET', `Entity/1?session_token=${invitee}`)).status).toBe(404);
    expect((await agentCall(t.apiUrl, 'GET', `Computer/${a.record.computers_id}?session_token=${invitee}`)).status).toBe(404);
  });
});
