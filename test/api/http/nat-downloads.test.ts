/**
 * Many phones behind one NAT (an office) pull one package at once: they all come from one address.
 * The per-address cap (socket-limits.ts) is against hosts holding connections they do nothing
 * with; an authenticated download must neither count against it nor be evicted when a flood from
 * other addresses fills the listener. The server runs under `ulimit -n 2048`, where its plan
 * allows 149 connections per address and 299 downloads at once.
 */
import { createHash, randomBytes } from 'node:crypto';
import { request, type IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planSockets } from '../../../src-main/backend/http/socket-limits.ts';
import { enrollByHand } from '../../helpers/backend.ts';
import { startChildBackend, type ChildBackend } from '../../helpers/child-backend.ts';

const FD_LIMIT = 2048;
const plan = planSockets(FD_LIMIT);
const DOWNLOADS = 200;
const OFFICE = '127.0.0.9';
// Larger than what the kernel and the client buffer for a paused reader: each download stays open.
const FILE_SIZE = 8 * 1024 * 1024;
const content = randomBytes(FILE_SIZE);
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

let server: ChildBackend;
let session: string;
let fileId: number;

beforeAll(async () => {
  server = await startChildBackend({}, `ulimit -n ${FD_LIMIT} &&`);
  const admin = { authorization: `Bearer ${server.info.admin_token}` };
  const invited = await fetch(`${server.info.admin_url}/api/invitations`, {
    method: 'POST',
    headers: { ...admin, 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'office@example.com', send_email: false }),
  }).then((r) => r.json() as Promise<{ user_token: string; invitation_token: string }>);
  session = (await enrollByHand(server.info.api_url, { ...invited, email: 'office@example.com' })).session;
  const upload = await fetch(
    `${server.info.admin_url}/api/packages?name=office.apk&package_name=org.example.office&version_code=1&if_unreadable=keep`,
    {
      method: 'POST',
      headers: { ...admin, 'content-type': 'application/octet-stream' },
      body: content,
    },
  );
  fileId = ((await upload.json()) as { id: number }).id;
}, 60_000);

afterAll(async () => {
  await server?.stop();
});

/** A download from `localAddress` on a connection of its own, paused once its status line is in. */
function pausedDownload(localAddress: string): Promise<IncomingMessage> {
  const url = `${server.info.api_url}/PluginMdmPackage/${fileId}?session_token=${session}`;
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { agent: false, localAddress, headers: { accept: 'application/octet-stream', 'content-type': 'application/json' } },
      (response) => {
        response.pause();
        resolve(response);
      },
    );
    req.once('error', reject);
    req.end();
  });
}

/** Reads the rest of a download: its length and SHA-256 (not kept: 200 × 8 MiB). */
function readAll(response: IncomingMessage): Promise<{ length: number; sha256: string }> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    let length = 0;
    response.on('data', (chunk: Buffer) => {
      length += chunk.length;
      hash.update(chunk);
    });
    response.once('end', () => resolve({ length, sha256: hash.digest('hex') }));
    response.once('error', reject);
    response.resume();
  });
}

/** A connection that sends half its headers and then nothing. */
function slowConnection(localAddress: string): Promise<Socket> {
  const { port } = new URL(server.info.api_url);
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port: Number(port), localAddress });
    socket.on('error', () => {});
    socket.once('connect', () => {
      socket.write('GET /api/initSession HTTP/1.1\r\nHost: 127.0.0.1\r\n');
      resolve(socket);
    });
    socket.once('close', () => resolve(socket));
  });
}

describe(`${DOWNLOADS} phones behind one address under ulimit -n ${FD_LIMIT}`, () => {
  it(
    `${DOWNLOADS} authenticated downloads at once from one address all complete, past its cap of ${plan.agentConnectionsPerAddress}, through a flood that fills the listener`,
    { timeout: 180_000 },
    async () => {
      expect(plan.agentConnectionsPerAddress).toBeLessThan(DOWNLOADS);
      expect(plan.agentDownloads).toBeGreaterThanOrEqual(DOWNLOADS);
      // Connections come in waves under the per-address cap (it still applies to connections not yet
      // authenticated); each download, once authenticated, leaves room for the next wave.
      const downloads: IncomingMessage[] = [];
      for (let i = 0; i < DOWNLOADS; i += 100)
        downloads.push(
          ...(await Promise.all(Array.from({ length: Math.min(100, DOWNLOADS - i) }, () => pausedDownload(OFFICE)))),
        );
      expect(downloads.map((d) => d.statusCode)).toEqual(Array(DOWNLOADS).fill(200));

      // Slow connections from 10 other hosts fill the listener; fair-share eviction takes from them,
      // never from the office's downloads (before, the office was the greediest address).
      const flood: Socket[] = [];
      for (let i = 0; i < plan.agentConnections; i += 100) {
        flood.push(
          ...(await Promise.all(Array.from({ length: 100 }, (_, j) => slowConnection(`127.0.2.${((i + j) % 10) + 1}`)))),
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(flood.filter((s) => !s.destroyed).length).toBeGreaterThan(0);

      const bodies = await Promise.all(downloads.map(readAll));
      for (const socket of flood) socket.destroy();
      const expected = sha256(content);
      expect(bodies.filter((body) => body.length === FILE_SIZE && body.sha256 === expected).length).toBe(DOWNLOADS);
    },
  );
});
