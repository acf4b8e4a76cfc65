import nodemailer, { type Transporter } from 'nodemailer';
import { targetKey, transportOptions, type MailTarget } from './smtp-config.ts';

interface PooledTransport {
  key: string;
  mailer: Transporter;
  inFlight: number;
}

export interface TransportLease {
  mailer: Transporter;
  release(): void;
}

/**
 * nodemailer's pooled SMTP transport for the target in force. A changed configuration gets a new
 * pool; the old one closes once its messages in flight are done.
 */
export class TransportPool {
  private readonly greetingTimeoutMs: number | undefined;
  private pool: PooledTransport | null = null;
  private readonly retired = new Set<PooledTransport>();

  /** `greetingTimeoutMs`: how long to wait for the server's greeting (nodemailer's default when absent). */
  constructor(options: { greetingTimeoutMs?: number } = {}) {
    this.greetingTimeoutMs = options.greetingTimeoutMs;
  }

  lease(target: Extract<MailTarget, { kind: 'smtp' }>): TransportLease {
    const key = targetKey(target);
    if (!this.pool || this.pool.key !== key) {
      if (this.pool) this.retire(this.pool);
      const options = transportOptions(target.smtp, { maxConnections: target.maxConnections });
      if (this.greetingTimeoutMs) options.greetingTimeout = this.greetingTimeoutMs;
      const mailer = nodemailer.createTransport(options as never) as Transporter;
      mailer.on('error', () => {
        // Per-message errors reach sendMail's promise; a transport-level one must not crash us.
      });
      this.pool = { key, mailer, inFlight: 0 };
    }
    const pool = this.pool;
    pool.inFlight++;
    return {
      mailer: pool.mailer,
      release: () => {
        pool.inFlight--;
        if (pool !== this.pool && pool.inFlight === 0) {
          pool.mailer.close();
          this.retired.delete(pool);
        }
      },
    };
  }

  /** Cuts every connection, messages in flight included (their sends fail). */
  closeAll(): void {
    for (const pool of [this.pool, ...this.retired]) pool?.mailer.close({ force: true } as never);
    this.pool = null;
    this.retired.clear();
  }

  private retire(pool: PooledTransport): void {
    if (pool.inFlight === 0) pool.mailer.close();
    else this.retired.add(pool);
  }
}
