import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog } from '../events/event-log.ts';
import { DEFAULT_SIGN_IN_SETTINGS, type SignInSettings } from '../../../src-shared/contract/accounts.ts';
import type { SettingsRepository } from './repository.ts';

/** Each setting's key in the settings table (beside the general settings, apart from them: the owner's alone). */
const KEY_PREFIX = 'sign_in.';

/**
 * The owner's sign-in settings: two-factor required for everyone, and how long console sessions
 * last (idle time, maximum age). Kept in the settings table under `sign_in.*`; read on every use.
 */
export class SignInSettingsStore {
  private readonly repository: SettingsRepository;
  private readonly work: UnitOfWork;
  private readonly events: Pick<EventLog, 'record'>;
  private cache: SignInSettings | null = null;

  constructor(repository: SettingsRepository, work: UnitOfWork, events: Pick<EventLog, 'record'>) {
    this.repository = repository;
    this.work = work;
    this.events = events;
  }

  /** Reads the settings into this process's cache: once at start, and again after each update. */
  async load(): Promise<SignInSettings> {
    const settings: SignInSettings = { ...DEFAULT_SIGN_IN_SETTINGS };
    for (const { key, value } of await this.repository.all()) {
      const name = key.slice(KEY_PREFIX.length);
      if (key.startsWith(KEY_PREFIX) && name in settings) (settings as Record<string, unknown>)[name] = JSON.parse(value);
    }
    this.cache = settings;
    return settings;
  }

  /** The settings as last loaded (`load` runs at start, and after every update). */
  get(): SignInSettings {
    if (!this.cache) throw new Error('sign-in settings read before they were loaded');
    return this.cache;
  }

  /** Applies a validated partial update, recorded with its before and after values; the whole new settings. */
  async update(patch: Partial<SignInSettings>): Promise<SignInSettings> {
    try {
      await this.work.run(async () => {
        const before = await this.load();
        const was: Record<string, unknown> = {};
        const now: Record<string, unknown> = {};
        for (const [name, value] of Object.entries(patch) as [keyof SignInSettings, unknown][]) {
          if (!(name in DEFAULT_SIGN_IN_SETTINGS) || value === undefined) continue;
          await this.repository.put(KEY_PREFIX + name, JSON.stringify(value));
          if (before[name] !== value) {
            was[name] = before[name];
            now[name] = value;
          }
        }
        const keys = Object.keys(now);
        if (keys.length > 0) {
          await this.events.record(
            'settings.sign_in_updated',
            `Sign-in settings changed: ${keys.join(', ')}`,
            {},
            {
              keys,
              before: was,
              after: now,
            },
          );
        }
      });
    } finally {
      await this.load();
    }
    return this.get();
  }

  /** The console sessions' limits these settings give. */
  sessionLimits(): { idleMs: number; maxAgeMs: number } {
    const { session_idle_minutes, session_max_age_hours } = this.get();
    return { idleMs: session_idle_minutes * 60_000, maxAgeMs: session_max_age_hours * 3_600_000 };
  }
}
