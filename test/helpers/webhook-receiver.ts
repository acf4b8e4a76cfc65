// A real HTTP receiver for webhook deliveries on loopback: it answers each request as told (a status,
// or never), keeps what it got, and checks each signature as docs/alerts.md tells a receiver to, with
// its own HMAC (not the server's code).
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedDelivery {
  headers: IncomingMessage['headers'];
  body: string;
  json: { event: string; created_at: string; data: Record<string, any> };
  /** The signature matches the secret, the timestamp and the body. */
  verified: boolean;
  /** What the receiver answered: a status, or 'hang' (never). */
  answer: number | 'hang';
}

export interface WebhookReceiver {
  url: string;
  port: number;
  received: ReceivedDelivery[];
  /** Deliveries answered with a 2xx. */
  accepted(): ReceivedDelivery[];
  close(): Promise<void>;
}

/** `answer(n)`: the status for the n-th request (1-based), or 'hang' to never answer. */
export async function startWebhookReceiver(
  secret: string,
  answer: (n: number) => number | 'hang' = () => 200,
  port = 0,
): Promise<WebhookReceiver> {
  const received: ReceivedDelivery[] = [];
  const hanging: ServerResponse[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const timestamp = String(request.headers['x-mdm-timestamp'] ?? '');
      const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`);
      const given = Buffer.from(String(request.headers['x-mdm-signature'] ?? ''));
      const verified = given.length === expected.length && timingSafeEqual(given, expected);
      const status = answer(received.length + 1);
      received.push({ headers: request.headers, body, json: JSON.parse(body), verified, answer: status });
      if (status === 'hang') hanging.push(response);
      else response.writeHead(status, { 'content-type': 'text/plain' }).end(status < 300 ? 'ok' : 'nope');
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${bound}/hook`,
    port: bound,
    received,
    accepted: () => received.filter((r) => typeof r.answer === 'number' && r.answer >= 200 && r.answer < 300),
    close: async () => {
      for (const response of hanging) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
