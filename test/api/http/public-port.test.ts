// `serve --public-port` (issue 23): devices reach the nodes through a balancer listening on another
// port than the nodes' agent listener; every link a node makes names the balancer's port.
// Real HTTP against a real backend.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeDeeplinkData } from '../../../src-main/backend/deeplink/codec.ts';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';

const PUBLIC_PORT = 22150; // nothing listens there: only the links name it
let t: TestBackend;
beforeAll(async () => {
  t = await startTestBackend({ publicPort: PUBLIC_PORT });
});
afterAll(async () => {
  await t.stop();
});

describe('--public-port', () => {
  it("puts the balancer's port into an invitation's deeplink and the server's addresses", async () => {
    const invited = await t.admin('POST', '/invitations', { email: `port-${process.pid}@example.com`, send_email: false });
    expect(invited.status).toBe(201);
    const deeplink = new URL(invited.body.deeplink as string);
    expect(deeplink.port).toBe(String(PUBLIC_PORT));
    const fields = decodeDeeplinkData(deeplink.searchParams.get('data'));
    expect(new URL(fields.backendUrl).port).toBe(String(PUBLIC_PORT));
    expect(new URL(t.backend.info.api_url).port).toBe(String(PUBLIC_PORT));
    expect(new URL(t.backend.info.deeplink_url).port).toBe(String(PUBLIC_PORT));
  });
});
