import { urlHost } from './config.ts';
import type { Settings, SettingsStore } from './settings/settings.ts';
import type { LinkTargets } from './deeplink/enrollment-links.ts';

export interface PublicHostSources {
  /** --public-host, when given. */
  flag?: string | undefined;
  /** Used when neither the flag nor the settings name one (the first LAN address). */
  fallback: string;
}

/**
 * The host phones reach this server at, and the API and deeplink URLs built on it and the agent
 * listener's port. Read at each use, so a settings change applies to every link at once.
 */
export class PublicLinks implements LinkTargets {
  private readonly settings: SettingsStore;
  private readonly agentPort: number;
  private readonly hosts: PublicHostSources;
  private chosenHost: string | null = null;

  constructor(settings: SettingsStore, agentPort: number, hosts: PublicHostSources) {
    this.settings = settings;
    this.agentPort = agentPort;
    this.hosts = hosts;
  }

  host(settings: Settings = this.settings.get()): string {
    return this.chosenHost ?? this.hosts.flag ?? (settings.public_host || this.hosts.fallback);
  }

  apiUrl(settings: Settings = this.settings.get()): string {
    return `http://${urlHost(this.host(settings))}:${this.agentPort}/api`;
  }

  deeplinkBase(settings: Settings = this.settings.get()): string {
    return settings.deeplink_base_url.replace(/\/+$/, '') || `http://${urlHost(this.host(settings))}:${this.agentPort}`;
  }

  /**
   * A LAN address picked in the console ("phones cannot reach this server" → Use …) applies at
   * once, even over a loopback --public-host; the flag applies again at the next start.
   */
  choose(host: string): void {
    this.chosenHost = host;
  }
}
