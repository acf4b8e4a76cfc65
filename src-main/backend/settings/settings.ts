import type { UnitOfWork } from '../db/unit-of-work.ts';
import { DEFAULT_GENERAL_SETTINGS, type Settings } from '../../../src-shared/contract/index.ts';
import { DEFAULT_MAIL_SETTINGS } from './mail-settings.ts';
import type { SettingsRepository } from './repository.ts';

/** Everything an admin can change at run time (its schema is the contract's). Stored as one JSON value per key. */
export type { Settings };

export const DEFAULT_SETTINGS: Settings = { ...DEFAULT_GENERAL_SETTINGS, ...DEFAULT_MAIL_SETTINGS };

export class SettingsStore {
  private readonly repository: SettingsRepository;
  private readonly work: UnitOfWork;
  private cache: Settings | null = null;

  constructor(repository: SettingsRepository, work: UnitOfWork) {
    this.repository = repository;
    this.work = work;
  }

  /** Reads the settings into this process's cache: once at start, and again after each update. */
  async load(): Promise<Settings> {
    const settings: Settings = { ...DEFAULT_SETTINGS };
    for (const { key, value } of await this.repository.all()) {
      if (key in settings) (settings as Record<string, unknown>)[key] = JSON.parse(value);
    }
    this.cache = settings;
    return settings;
  }

  /** The settings as last loaded (`load` runs at start, and after every update). */
  get(): Settings {
    if (!this.cache) throw new Error('settings read before they were loaded');
    return this.cache;
  }

  /** The helpdesk fields every deeplink carries, by setting name. */
  deeplinkFields(settings: Settings = this.get()): Record<string, string> {
    return {
      helpdesk_name: settings.helpdesk_name,
      helpdesk_phone: settings.helpdesk_phone,
      helpdesk_website: settings.helpdesk_website,
      helpdesk_email: settings.helpdesk_email,
    };
  }

  /** The helpdesk as the admin API and CLI show it beside a code or an invitation. */
  helpdesk(settings: Settings = this.get()): { name: string; phone: string; website: string; email: string } {
    return {
      name: settings.helpdesk_name,
      phone: settings.helpdesk_phone,
      website: settings.helpdesk_website,
      email: settings.helpdesk_email,
    };
  }

  /**
   * Applies a validated partial update; returns the whole new settings. `changed` runs in the same
   * transaction with the changed keys' values before and after (it records the change: if it
   * throws, nothing is changed).
   */
  async update(patch: Partial<Settings>, changed?: (change: SettingsChange) => Promise<unknown> | void): Promise<Settings> {
    try {
      await this.work.run(async () => {
        const current = await this.load();
        const change: SettingsChange = { keys: [], before: {}, after: {} };
        for (const [key, value] of Object.entries(patch)) {
          if (!(key in DEFAULT_SETTINGS) || value === undefined) continue;
          await this.repository.put(key, JSON.stringify(value));
          change.keys.push(key);
          change.before[key] = current[key as keyof Settings];
          change.after[key] = value;
        }
        await changed?.(change);
      });
    } finally {
      await this.load();
    }
    return this.get();
  }
}

/** What an update changed: its keys, their values before and after. */
export interface SettingsChange {
  keys: string[];
  before: Record<string, unknown>;
  after: Record<string, unknown>;
}
