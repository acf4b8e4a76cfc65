/**
 * Readers that never read must cost the server a bounded amount of memory, and downloads beyond
 * the listener's cap get a 503 in the spec's error shape. The server runs in a process of its own,
 * so its resident memory is measured alone (a memory bound, not a timing).
 */
import { createHash, randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentCall, enrollByHand } from '../../helpers/backend.ts';
import { startChildBackend, type ChildBackend } from '../../helpers/child-backend.ts';
import { adminClient } from '../../../src-shared/contract/admin-client.ts';

const FILE_SIZE = 8 * 1024 * 1024;
const STALLED = 500;
const MAX_DOWNLOADS = 480;
const MiB = 1024 * 1024;

let server: ChildBackend;
let session: string;
let fileId: number;
const content = randomBytes(FILE_SIZE);

beforeAll(async () => {
  server = await startChildBackend({ sockets: { agentDownloads: MAX_DOWNLOADS } });
  const admin = adminClient({ baseUrl: server.info.admin_url, token: server.info.admin_token });
  const invitation = await admin.invitations.create({ body: { email: 'stall@example.com', send_email: false } });
  session = (await enrollByHand(server.info.api_url, invitation)).session;
  fileId = (await admin.files.upload({ body: content, query: { name: 'big.bin' } })).id;
});

afterAll(async () => {
  await server?.stop();
});

const download = async () => {
  const response = await fetch(`${server.info.api_url}/PluginMdmFile/${fileId}?session_token=${session}`, {
    headers: { accept: 'application/octet-stream', 'content-type': 'application/json' },
  });
  const bytes = Buffer.from(await response.arrayBuffer());
  return { status: response.status, sha256: createHash('sha256').update(bytes).digest('hex'), body: bytes };
};

/** Sends a download request, reads what first arrives (the status line), then never reads again. */
function stalledReader(): Promise<{ socket: Socket; status: number; head: string }> {
  const { port } = new URL(server.info.api_url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () => {
      socket.write(
        `GET /api/PluginMdmFile/${fileId}?session_token=${session} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/octet-stream\r\nContent-Type: application/json\r\n\r\n`,
      );
    });
    socket.once('error', reject);
    socket.once('readable', () => {
      const head = String(socket.read() ?? '').slice(0, 2000);
      resolve({ socket, status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]), head });
    });
  });
}

const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('downloads under stalled readers', () => {
  it(
    `${STALLED} readers that never read cost a bounded buffer each; beyond ${MAX_DOWNLOADS}, a 503`,
    { timeout: 60_000 },
    async () => {
      // Warm: code loaded, one whole download served and checked.
      const warm = await download();
      expect(warm.status).toBe(200);
      expect(warm.sha256).toBe(createHash('sha256').update(content).digest('hex'));
      await settle(500);
      const before = server.rss();

      const readers = await Promise.all(Array.from({ length: STALLED }, stalledReader));
      await settle(2000); // the server writes what the sockets take, then waits on backpressure
      const after = server.rss();
      const growth = after - before;

      const served = readers.filter((r) => r.status === 200);
      const refused = readers.filter((r) => r.status === 503);
      expect(served.length).toBe(MAX_DOWNLOADS);
      expect(refused.length).toBe(STALLED - MAX_DOWNLOADS);
      const body = refused[0]!.head.slice(refused[0]!.head.indexOf('\r\n\r\n') + 4);
      expect(JSON.parse(body)).toEqual([
        'ERROR_TOO_MANY_DOWNLOADS',
        expect.stringContaining(`${MAX_DOWNLOADS} downloads are already in progress`),
      ]);
      expect(refused[0]!.head).toMatch(/retry-after: 5/i);

      // The bound: the shared 32 MiB read-ahead pool, 96 MiB for chunks already sent that the
      // garbage collector has not freed yet, and 128 KiB per reader (its 64 KiB chunk, the socket's
      // and the request's bookkeeping). Measured: +116 MiB for 240 and for 480 readers alike on a
      // quiet machine; before backpressure bounded it, each reader held up to two 1 MiB chunks
      // (+313 MiB for 240 readers). The garbage collector's lag is what varies with the machine:
      // +124–137 MiB alone, +150–157 MiB beside the rest of npm test (all anonymous memory, a
      // forced full GC before measuring did not lower it), so its share is 96 MiB, not 64.
      console.log(
        `RSS ${Math.round(before / MiB)} MiB → ${Math.round(after / MiB)} MiB (+${Math.round(growth / MiB)} MiB) with ${served.length} stalled downloads of ${FILE_SIZE / MiB} MiB`,
      );
      expect(growth).toBeLessThan(32 * MiB + 96 * MiB + MAX_DOWNLOADS * 128 * 1024);

      // The server still answers, and the slots come back once the stalled readers leave.
      const metadata = await agentCall(server.info.api_url, 'GET', `PluginMdmFile/${fileId}?session_token=${session}`);
      expect(metadata.status).toBe(200);
      for (const reader of readers) reader.socket.destroy();
      let again = await download();
      for (let attempt = 0; again.status === 503 && attempt < 50; attempt++) {
        await settle(100);
        again = await download();
      }
      expect(again.status).toBe(200);
      expect(again.body.equals(content)).toBe(true);
    },
  );
});
