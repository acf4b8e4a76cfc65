import type { AddressInfo } from 'node:net';
import PostalMime, { type Email } from 'postal-mime';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';

export interface ReceivedMail {
  envelope: { from: string; to: string[] };
  raw: Buffer;
  parsed: Email;
  /** The X-MDM-Invitation-Id header, when there is one. */
  invitationId: number | null;
}

export interface TestSmtp {
  port: number;
  url(userinfo?: string): string;
  received: ReceivedMail[];
  /** Most SMTP sessions open at the same time, over the server's life. */
  maxConcurrentSessions(): number;
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedMail[]>;
  close(): Promise<void>;
}

/**
 * A real SMTP server (smtp-server) on loopback that keeps and parses what it receives.
 * Plain by default (no STARTTLS offered); `options` changes that (auth, TLS…).
 */
export async function startTestSmtp(options: Partial<SMTPServerOptions> & { port?: number } = {}): Promise<TestSmtp> {
  const received: ReceivedMail[] = [];
  const waiters: (() => void)[] = [];
  const open = new Set<string>();
  let maxOpen = 0;
  const { port: wantedPort, ...serverOptions } = options;
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    authOptional: true,
    allowInsecureAuth: true,
    logger: false,
    // Closing while a pooled client is still connected waits this long, not 30 s.
    closeTimeout: 500,
    ...serverOptions,
    onConnect(session, callback) {
      open.add(session.id);
      maxOpen = Math.max(maxOpen, open.size);
      callback();
    },
    onClose(session) {
      open.delete(session.id);
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks);
        PostalMime.parse(raw).then(
          (parsed) => {
            const header = parsed.headers.find((h) => h.key === 'x-mdm-invitation-id')?.value;
            received.push({
              envelope: {
                from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
                to: session.envelope.rcptTo.map((r) => r.address),
              },
              raw,
              parsed,
              invitationId: header ? Number(header) : null,
            });
            for (const wake of waiters.splice(0)) wake();
            callback();
          },
          (error: Error) => callback(error),
        );
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(wantedPort ?? 0, '127.0.0.1', () => resolve());
  });
  server.on('error', () => {
    // Client-side aborts show up here; the tests look at what was received.
  });
  const port = (server.server.address() as AddressInfo).port;
  return {
    port,
    url: (userinfo) => `${options.secure ? 'smtps' : 'smtp'}://${userinfo ? `${userinfo}@` : ''}127.0.0.1:${port}`,
    received,
    maxConcurrentSessions: () => maxOpen,
    waitFor: async (count, timeoutMs = 20_000) => {
      const deadline = Date.now() + timeoutMs;
      while (received.length < count) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`expected ${count} messages, got ${received.length}`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(left, 500));
          waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      return received;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export function asBuffer(content: ArrayBuffer | Uint8Array | string): Buffer {
  if (typeof content === 'string') return Buffer.from(content, 'base64');
  return Buffer.from(content instanceof ArrayBuffer ? new Uint8Array(content) : content);
}

/** Polls until `check` returns something truthy (generous timeout; never a timing assertion). */
export async function eventually<T>(check: () => Promise<T | undefined | null | false> | T | undefined | null | false, timeoutMs = 20_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
      last = value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${last instanceof Error ? last.message : JSON.stringify(last)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
