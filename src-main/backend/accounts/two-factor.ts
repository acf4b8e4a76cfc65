import { createHash, randomBytes } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog } from '../events/event-log.ts';
import { ApiError } from '../errors.ts';
import type { AccountRepository, StoredAccount } from './repository.ts';

/** What authenticator apps expect by default: SHA-1, six digits, thirty seconds (RFC 6238). */
const PERIOD_S = 30;
const DIGITS = 6;
/** A code of the previous or next period is accepted too (clocks drift, people type slowly). */
const WINDOW = 1;
export const RECOVERY_CODE_COUNT = 10;
/** Recovery codes: ten characters of an alphabet without look-alikes (50 bits), shown as `xxxxx-xxxxx`. */
const RECOVERY_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';
const ISSUER = 'MDM Console';

/** How a second step was passed. */
export type SecondFactor = 'totp' | 'recovery';

export interface TwoFactorStatus {
  enabled: boolean;
  enabled_at: string | null;
  recovery_codes_left: number;
}

const nameOf = (account: StoredAccount) => account.email ?? account.display_name;

function totpFor(account: StoredAccount, base32: string): TOTP {
  return new TOTP({
    issuer: ISSUER,
    label: nameOf(account),
    algorithm: 'SHA1',
    digits: DIGITS,
    period: PERIOD_S,
    secret: Secret.fromBase32(base32),
  });
}

function drawRecoveryCode(): string {
  const bytes = randomBytes(10);
  let code = '';
  for (let i = 0; i < 10; i++) code += RECOVERY_ALPHABET[bytes[i]! % RECOVERY_ALPHABET.length];
  return `${code.slice(0, 5)}-${code.slice(5)}`;
}

/** What is kept of a recovery code: SHA-256 of the account and the code as typed without case, spaces or dashes. */
function recoveryHash(accountId: number, code: string): string {
  return createHash('sha256')
    .update(`${accountId}:${code.toLowerCase().replace(/[\s-]/g, '')}`)
    .digest('hex');
}

/**
 * TOTP two-factor sign-in (otpauth: RFC 6238, SHA-1, 6 digits, 30 s): an admin enrols an
 * authenticator app from a secret shown once (QR code and text), confirms it with a code, and gets
 * ten single-use recovery codes, shown once and kept as hashes. A code is accepted once (its time
 * step is remembered). The secret is never shown again, never logged, never in the audit trail.
 */
export class TwoFactorService {
  private readonly store: AccountRepository;
  private readonly events: Pick<EventLog, 'record'>;
  private readonly work: UnitOfWork;
  private readonly now: () => number;

  constructor(deps: {
    store: AccountRepository;
    events: Pick<EventLog, 'record'>;
    work: UnitOfWork;
    now?: (() => number) | undefined;
  }) {
    this.store = deps.store;
    this.events = deps.events;
    this.work = deps.work;
    this.now = deps.now ?? Date.now;
  }

  async status(account: StoredAccount): Promise<TwoFactorStatus> {
    const enabled = account.totp_secret !== null;
    return {
      enabled,
      enabled_at: account.totp_enabled_at,
      recovery_codes_left: enabled ? await this.store.recoveryCodesLeft(account.id) : 0,
    };
  }

  /** A new secret to enrol (replacing one not confirmed): shown in this answer only. 409 while two-factor is on. */
  async begin(account: StoredAccount): Promise<{ secret: string; otpauth_url: string }> {
    if (account.totp_secret !== null) {
      throw new ApiError(409, 'ERROR_CONFLICT', 'Two-factor sign-in is on already: turn it off first to enrol another app.');
    }
    const secret = new Secret({ size: 20 }).base32;
    await this.work.run(async () => {
      await this.store.setPendingTotp(account.id, secret);
      await this.events.record(
        'account.two_factor_enrolment_started',
        `${account.email ?? account.display_name} started enrolling an authenticator app`,
        {},
        { account_id: account.id },
      );
    });
    return { secret, otpauth_url: totpFor(account, secret).toString() };
  }

  /** The enrolment confirmed by a code of the app: two-factor on, and ten recovery codes returned (this once). */
  confirm(account: StoredAccount, code: string): Promise<{ recovery_codes: string[] }> {
    return this.work.run(async () => {
      const current = await this.store.byId(account.id);
      if (!current) throw new ApiError(404, 'ERROR_NOT_FOUND', `No admin ${account.id}`);
      if (current.totp_secret !== null) throw new ApiError(409, 'ERROR_CONFLICT', 'Two-factor sign-in is on already.');
      const pending = current.totp_pending_secret;
      if (pending === null) {
        throw new ApiError(409, 'ERROR_CONFLICT', 'Start the enrolment first: no secret is waiting for a code.');
      }
      const step = this.stepOf(current, pending, code);
      if (step === null) {
        throw new ApiError(
          400,
          'ERROR_TWO_FACTOR_CODE',
          'That code does not match: type the six digits the app shows now (check the phone’s clock if it keeps failing).',
        );
      }
      const codes = Array.from({ length: RECOVERY_CODE_COUNT }, drawRecoveryCode);
      await this.store.enableTotp(
        current.id,
        pending,
        new Date(this.now()).toISOString(),
        step,
        codes.map((c) => recoveryHash(current.id, c)),
      );
      await this.events.record(
        'account.two_factor_enabled',
        `Two-factor sign-in turned on for ${nameOf(current)}`,
        {},
        {
          account_id: current.id,
        },
      );
      return { recovery_codes: codes };
    });
  }

  /**
   * The sign-in's second step: a code of the app (each accepted once) or an unused recovery code
   * (then used up). Null when neither matches, or two-factor is off.
   */
  async verify(account: StoredAccount, code: string): Promise<SecondFactor | null> {
    const current = await this.store.byId(account.id);
    if (!current?.totp_secret) return null;
    const typed = code.trim();
    if (/^\d[\d\s]*$/.test(typed)) {
      const step = this.stepOf(current, current.totp_secret, typed);
      return step !== null && (await this.store.takeTotpStep(current.id, step)) ? 'totp' : null;
    }
    if (!/^[a-z0-9\s-]{10,20}$/i.test(typed)) return null;
    return this.work.run(async () => {
      if (!(await this.store.useRecoveryCode(current.id, recoveryHash(current.id, typed), new Date(this.now()).toISOString()))) {
        return null;
      }
      await this.events.record(
        'account.recovery_code_used',
        `A recovery code was used to sign in as ${nameOf(current)} (${await this.store.recoveryCodesLeft(current.id)} left)`,
        {},
        { account_id: current.id, left: await this.store.recoveryCodesLeft(current.id) },
      );
      return 'recovery' as const;
    });
  }

  /** Turns one's own two-factor off, with a current code or a recovery code. */
  async disable(account: StoredAccount, code: string, required: boolean): Promise<void> {
    if (account.totp_secret === null) return;
    if (required) {
      throw new ApiError(
        409,
        'ERROR_TWO_FACTOR_REQUIRED',
        'The owner requires two-factor sign-in for everyone: it cannot be turned off (an owner or admin can reset it, to enrol again).',
      );
    }
    if ((await this.verify(account, code)) === null) {
      throw new ApiError(400, 'ERROR_TWO_FACTOR_CODE', 'That is neither a current code of the app nor an unused recovery code.');
    }
    await this.work.run(async () => {
      await this.store.clearTotp(account.id);
      await this.events.record(
        'account.two_factor_disabled',
        `Two-factor sign-in turned off by ${nameOf(account)}`,
        {},
        {
          account_id: account.id,
        },
      );
    });
  }

  /**
   * Another admin's two-factor reset (a lost phone): secret and recovery codes gone; the admin
   * signs in with the password alone, or enrols again at sign-in when two-factor is required.
   */
  async resetTwoFactor(accountId: number): Promise<void> {
    await this.work.run(async () => {
      const account = await this.store.byId(accountId);
      if (!account) throw new ApiError(404, 'ERROR_NOT_FOUND', `No admin ${accountId}`);
      if (account.totp_secret === null && account.totp_pending_secret === null) return;
      await this.store.clearTotp(accountId);
      await this.events.record(
        'account.two_factor_reset',
        `Two-factor sign-in reset for ${nameOf(account)}`,
        {},
        {
          account_id: accountId,
          email: account.email,
          name: account.display_name,
          before: { two_factor: account.totp_secret !== null },
          after: { two_factor: false },
        },
      );
    });
  }

  /** The time step a code of `secret` was made for (within the window), or null. */
  private stepOf(account: StoredAccount, secret: string, code: string): number | null {
    const token = code.replace(/\s/g, '');
    if (!new RegExp(`^\\d{${DIGITS}}$`).test(token)) return null;
    const timestamp = this.now();
    const totp = totpFor(account, secret);
    const delta = totp.validate({ token, timestamp, window: WINDOW });
    return delta === null ? null : totp.counter({ timestamp }) + delta;
  }
}
