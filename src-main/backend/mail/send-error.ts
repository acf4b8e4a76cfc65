import type { NodemailerError } from 'nodemailer';
import { ApiError } from '../errors.ts';

/** What an SMTP failure reads as: the server's own words when there are some. */
export function describeSendError(error: unknown): { message: string; response: string | null } {
  const e = error as NodemailerError;
  let message = (e?.message || String(error)).trim();
  const response = typeof e?.response === 'string' && e.response ? e.response.trim() : null;
  // Node's TLS errors say what is wrong with the certificate but not that it is about TLS.
  if (!response && /certificate|self[- ]signed|tls|ssl|handshake/i.test(message) && !/^TLS/.test(message))
    message = `TLS error: ${message}`;
  return { message: response && !message.includes(response) ? `${message}: ${response}` : message, response };
}

/** A test send the server refused or that could not reach it. */
export class MailSendError extends ApiError {
  readonly response: string | null;
  readonly smtpCode: string | null;
  readonly responseCode: number | null;
  constructor(message: string, response: string | null, smtpCode: string | null, responseCode: number | null) {
    super(502, 'ERROR_MAIL_SEND', message);
    this.response = response;
    this.smtpCode = smtpCode;
    this.responseCode = responseCode;
  }
}
