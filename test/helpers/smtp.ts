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
  /** SMTP sessions opened so far (greeted or not). */
  connections(): number;
  /** RCPT TO refused with 451 by the greylist. */
  greylisted(): number;
  /** Stops stalling greetings (see `stallGreetings`). */
  stopStalling(): void;
  /** From now on, the reply to each message's DATA waits until `releaseData()` (a server that stops answering). */
  holdData(): void;
  /** Answers the held messages (those whose client is still connected are accepted) and stops holding. */
  releaseData(): void;
  /** Messages whose DATA is waiting for the server's reply now. */
  heldData(): number;
  /** Messages whose client hung up before the server accepted them (not in `received`). */
  dropped(): number;
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedMail[]>;
  close(): Promise<void>;
}

export interface TestSmtpBehaviour {
  port?: number;
  /** Greylisting as real servers do it: the first RCPT TO of each recipient gets 451, later ones pass. */
  greylist?: boolean;
  /** Holds back the greeting of every new session until stopStalling() (clients time out waiting). */
  stallGreetings?: boolean;
  /** A slow server: the reply to each message's DATA comes this many ms after its last byte. */
  dataDelayMs?: () => number;
}

/**
 * A real SMTP server (smtp-server) on loopback that keeps and parses what it receives.
 * Plain by default (no STARTTLS offered); `options` changes that (auth, TLS, greylisting, stalls).
 */
export async function startTestSmtp(options: Partial<SMTPServerOptions> & TestSmtpBehaviour = {}): Promise<TestSmtp> {
  const received: ReceivedMail[] = [];
  const waiters: (() => void)[] = [];
  const open = new Set<string>();
  let maxOpen = 0;
  let connections = 0;
  let greylisted = 0;
  const seenRecipients = new Set<string>();
  let stalling = Boolean(options.stallGreetings);
  const stalled: (() => void)[] = [];
  const { port: wantedPort, greylist, stallGreetings: _stall, dataDelayMs, ...serverOptions } = options;
  // DATA replies held back (holdData), and sessions whose client has gone.
  let holding = false;
  const held: (() => void)[] = [];
  const closed = new Set<string>();
  let dropped = 0;
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
      connections++;
      maxOpen = Math.max(maxOpen, open.size);
      // smtp-server sends its 220 greeting only once this callback runs.
      if (stalling) stalled.push(() => callback());
      else callback();
    },
    ...(greylist
      ? {
          onRcptTo(address: { address: string }, _session: unknown, callback: (error?: Error | null) => void) {
            const key = address.address.toLowerCase();
            if (seenRecipients.has(key)) return callback();
            seenRecipients.add(key);
            greylisted++;
            const error = new Error('Greylisted, please try again later') as Error & { responseCode: number };
            error.responseCode = 451;
            callback(error);
          },
        }
      : {}),
    onClose(session) {
      open.delete(session.id);
      closed.add(session.id);
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks);
        PostalMime.parse(raw).then(
          (parsed) => {
            const accept = () => {
              // A client that hung up before the reply never learns the message was taken: not delivered.
              if (closed.has(session.id)) {
                dropped++;
                return;
              }
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
            };
            const delay = dataDelayMs?.() ?? 0;
            const answer = () => {
              if (holding) held.push(accept);
              else accept();
            };
            if (delay > 0) setTimeout(answer, delay);
            else answer();
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
    connections: () => connections,
    greylisted: () => greylisted,
    holdData: () => {
      holding = true;
    },
    releaseData: () => {
      holding = false;
      for (const accept of held.splice(0)) accept();
    },
    heldData: () => held.length,
    dropped: () => dropped,
    stopStalling: () => {
      stalling = false;
      for (const release of stalled.splice(0)) release();
    },
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
    close: () => {
      stalling = false;
      holding = false;
      for (const accept of held.splice(0)) accept();
      for (const release of stalled.splice(0)) release();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export function asBuffer(content: ArrayBuffer | Uint8Array | string): Buffer {
  if (typeof content === 'string') return Buffer.from(content, 'base64');
  return Buffer.from(content instanceof ArrayBuffer ? new Uint8Array(content) : content);
}

/** Polls until `check` returns something truthy (generous timeout; never a timing assertion). */
export async function eventually<T>(
  check: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  timeoutMs = 20_000,
  what = 'condition',
): Promise<T> {
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
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}; last: ${last instanceof Error ? last.message : JSON.stringify(last)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
