import { chmodSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import nodemailer, { type SendMailOptions } from 'nodemailer';

/**
 * Without SMTP, messages become .eml files in DATA_DIR/outbox (owner-only: they carry the user
 * token). Any mail client opens them; the admin hands the link or QR code over another way.
 */
export class Outbox {
  readonly dir: string;
  private readonly composer = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'crlf' });

  constructor(dataDir: string) {
    this.dir = join(dataDir, 'outbox');
  }

  /** Writes the message; returns the file path and Message-ID. */
  async write(message: SendMailOptions, label: string): Promise<{ file: string; messageId: string }> {
    const info = await this.composer.sendMail(message);
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const stamp = new Date().toISOString().replace(/[-:]/g, '');
    const safe = label
      .toLowerCase()
      .replace(/[^a-z0-9._-]+/g, '_')
      .slice(0, 80);
    const file = join(this.dir, `${stamp}-${safe}.eml`);
    const temp = `${file}.tmp`;
    writeFileSync(temp, info.message as Buffer, { mode: 0o600 });
    chmodSync(temp, 0o600);
    renameSync(temp, file);
    return { file, messageId: info.messageId };
  }
}
