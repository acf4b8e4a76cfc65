// The Node HTTP ceiling of the enrollment scenario: bare Fastify answering the five requests of
// the enrollment sequence with constant JSON of the same shape and size as the real answers. No
// schemas, no database, no logic: what any Node server must pay per enrollment at least.
// Usage: node bench/servers/ceiling.ts PORTFILE   (listens on 127.0.0.1, port 0, writes the port)
import Fastify from 'fastify';
import { writeFileSync } from 'node:fs';

const session = {
  valid_id: 'c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00',
  coreID: 4,
  corename: 'someone-1@bench.example',
  corefriendlyname: 'someone-1@bench.example',
  coreactive_entity: 1,
  core_plugins: { 0: 'mdm' },
  coreactiveprofile: { id: 1, name: 'Self-Service' },
  coreprofiles: { 1: { id: 1, name: 'Self-Service' }, 2: { id: 2, name: 'Guest' } },
  plugin_mdm_guest_profiles_id: 2,
};
const fullSession = { ...session, session };
const record = {
  id: 1,
  name: 'R58ABCDEFGH',
  version: '1.0.0',
  computers_id: 1,
  wipe: 0,
  lock: 0,
  enroll_status: 'enrolled',
  entities_id: 1,
  plugin_mdm_fleets_id: 1,
  last_report: null,
  last_contact: null,
  certificate: '',
  topic: '/1/agent/R58ABCDEFGH',
  mqttpasswd: 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopq',
  api_token: 'c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00',
  broker: '127.0.0.1',
  port: 1883,
  tls: 0,
  android_bugcollecctor_url: '',
  android_bugcollector_login: '',
  android_bugcollector_passwd: '',
  serial: 'R58ABCDEFGH',
  uuid: '6f1c3a52-8d4e-4c6b-9a51-3f0e2b7d9c10',
  type: 'android',
  links: [
    { rel: 'Computer', href: 'http://127.0.0.1:8080/api/Computer/1' },
    { rel: 'Entity', href: 'http://127.0.0.1:8080/api/Entity/1' },
    { rel: 'PluginMdmFleet', href: 'http://127.0.0.1:8080/api/PluginMdmFleet/1' },
  ],
};

const app = Fastify({ logger: false });
// Agents send Content-Type: application/json on bodiless requests too (as the real server accepts).
app.removeAllContentTypeParsers();
app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => {
  const text = String(body);
  done(null, text === '' ? undefined : JSON.parse(text));
});
app.get('/api/initSession', async () => ({ session_token: session.valid_id }));
app.get('/api/getFullSession', async () => fullSession);
app.post('/api/changeActiveProfile', async () => ({ message: 'Profile changed', profiles_id: 2 }));
app.post('/api/PluginMdmAgent', async (_request, reply) => reply.code(201).send({ id: '1', message: 'Device enrolled' }));
app.get('/api/PluginMdmAgent/:id', async () => record);

await app.listen({ port: 0, host: '127.0.0.1' });
writeFileSync(process.argv[2]!, String((app.server.address() as { port: number }).port));
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
