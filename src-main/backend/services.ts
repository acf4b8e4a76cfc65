import { AccountService } from './accounts/accounts.ts';
import { AuditLog } from './audit/audit-log.ts';
import { SqliteAuditRepository } from './audit/repository.ts';
import { SqliteAccountRepository } from './accounts/repository.ts';
import { SqliteAccountInviteRepository } from './accounts/invite-repository.ts';
import { AccountInviteMailQuery } from './accounts/mail-query.ts';
import { AccountManagement } from './accounts/management.ts';
import { AdminSessionService, type AdminSessionLimits } from './admin-sessions/admin-sessions.ts';
import { SqliteAdminSessionRepository } from './admin-sessions/repository.ts';
import { AgentService } from './agents/agents.ts';
import { ApprovalService } from './agents/approval.ts';
import { EnrollmentService } from './agents/enrollment.ts';
import { DeviceReports } from './agents/reports.ts';
import { BrokerAgentRepository } from './agents/broker-repository.ts';
import { SqliteReportRepository } from './agents/report-repository.ts';
import { SqliteAgentRepository } from './agents/repository.ts';
import { DeviceQueryRepository } from './agents/device-query-repository.ts';
import { DeviceFilter } from './agents/device-filter.ts';
import { SqliteViewRepository } from './views/repository.ts';
import { ViewService } from './views/views.ts';
import type { MqttBroker } from './broker/port.ts';
import { EnrollmentCodeService } from './codes/codes.ts';
import { SqliteCodeRepository } from './codes/repository.ts';
import type { Sql } from './db/sql.ts';
import { UnitOfWork } from './db/unit-of-work.ts';
import { PublicLinks, type PublicHostSources } from './public-links.ts';
import { EventLog } from './events/event-log.ts';
import { ExportService } from './exports/exports.ts';
import { ExportRepository } from './exports/repository.ts';
import { SqliteEventRepository } from './events/event-repository.ts';
import { SqliteFleetRepository } from './fleets/fleet-repository.ts';
import { FleetService } from './fleets/fleets.ts';
import { InvitationService } from './invitations/invitations.ts';
import { InvitationMailQuery } from './invitations/mail-query.ts';
import { SqliteInvitationRepository } from './invitations/repository.ts';
import {
  createMail,
  SqliteAccountDeliveryRepository,
  SqliteDeliveryRepository,
  SqliteNotificationRepository,
  type MailOptions,
} from './mail/index.ts';
import { SqliteSessionRepository } from './sessions/session-repository.ts';
import { RateLimitRepository } from './sessions/rate-limit-repository.ts';
import { MemoryRateBuckets } from './sessions/rate-limit.ts';
import { SignInRepository } from './admin-sessions/sign-in-repository.ts';
import { SessionService, type SessionLimits } from './sessions/sessions.ts';
import { UserRepository } from './sessions/user-repository.ts';
import { SqliteSettingsRepository } from './settings/repository.ts';
import { SettingsStore } from './settings/settings.ts';
import { SignInSettingsStore } from './settings/sign-in-settings.ts';
import { SqliteStatusCounts } from './status/repository.ts';
import { DailyFigures } from './reports/figures.ts';
import { createEventFeed, FeedIdentity, type PostgresFeedOptions } from './cluster/feed.ts';
import { FigureRepository } from './reports/repository.ts';

export interface ServiceOptions {
  /** The agent listener's port, already bound: every link and agent record names it. */
  agentPort: number;
  publicHost: PublicHostSources;
  mail?: MailOptions;
  sessionLimits?: Partial<SessionLimits> | undefined;
  /** The admin listener's address (`http://127.0.0.1:PORT`): invited admins' set-up links point there. */
  adminUrl: string;
  /** Console sessions' limits over the owner's sign-in settings (tests). */
  adminSessionLimits?: Partial<AdminSessionLimits> | undefined;
  /** The clock of console sessions and two-factor codes (tests drive it); default the real one. */
  now?: (() => number) | undefined;
  /** Whether the database is still open (the mail worker stops once it closes); default: always. */
  isOpen?: (() => boolean) | undefined;
  /** How often the reports sample the devices (reports/figures.ts); default 5 minutes. */
  reportSampleEveryMs?: number | undefined;
  /** This node's name on the event feed's channel (cluster/feed.ts); default the host name. */
  nodeName?: string | undefined;
  /** The event feed's listening connection: its reconnection waits and check (tests shorten them). */
  feed?: PostgresFeedOptions | undefined;
}

/**
 * The domain services, wired once over one database. The database itself stays here: callers get
 * services and repositories, never `db`. Enrollment joins once the broker is up (`withEnrollment`).
 */
export async function createServices(sql: Sql, options: ServiceOptions) {
  const work = new UnitOfWork(sql);
  const audit = new AuditLog(new SqliteAuditRepository(sql));
  // Every node's committed events (cluster/feed.ts): on PostgreSQL each insert notifies the others.
  const feedIdentity = new FeedIdentity(options.nodeName);
  const eventStore = new SqliteEventRepository(sql, feedIdentity);
  const events = new EventLog(eventStore, work, audit);
  const feed = createEventFeed(sql, events, eventStore, feedIdentity, options.feed);
  const accountStore = new SqliteAccountRepository(sql);
  const settings = new SettingsStore(new SqliteSettingsRepository(sql), work);
  const signInSettings = new SignInSettingsStore(new SqliteSettingsRepository(sql), work, events);
  await settings.load();
  await signInSettings.load();
  // Another node's change of the settings applies here too (this node's own reloads as it writes).
  feed.subscribe(async (event, origin) => {
    if (origin !== 'elsewhere') return;
    if (event.type === 'settings.updated') await settings.load();
    if (event.type === 'settings.sign_in_updated') await signInSettings.load();
  });
  const adminSessions = new AdminSessionService(
    new SqliteAdminSessionRepository(sql),
    () => signInSettings.sessionLimits(),
    options.now,
    options.adminSessionLimits,
  );
  const accountInvites = new SqliteAccountInviteRepository(sql);
  const setupLink = (token: string) => `${options.adminUrl}/set-password?token=${token}`;
  const links = new PublicLinks(settings, options.agentPort, options.publicHost);
  const users = new UserRepository(sql);
  // Sign-in throttles, tickets and challenges: in the database, the same on every node. The agent
  // API's rate limits too on PostgreSQL (several nodes); on SQLite one server owns the database, and
  // its buckets in memory spare each initSession and enrollment a write commit (issue 24).
  const rates = sql.engine === 'postgres' ? new RateLimitRepository(sql) : new MemoryRateBuckets();
  const signIns = new SignInRepository(sql);
  const sessions = new SessionService({ store: new SqliteSessionRepository(sql), users, work, rates }, options.sessionLimits);
  const fleets = new FleetService({ store: new SqliteFleetRepository(sql), events, work, scopes: accountStore });
  const accounts = new AccountService({ store: accountStore, events, work, now: options.now, fleets, setupLinks: signIns });
  const deliveries = new SqliteDeliveryRepository(sql);
  const invitationRepository = new SqliteInvitationRepository(sql);
  const mailable = new InvitationMailQuery({ repository: invitationRepository, settings, links });
  const mail = createMail(
    {
      isOpen: options.isOpen ?? (() => true),
      events,
      work,
      settings,
      invitations: mailable,
      deliveries,
      accountDeliveries: new SqliteAccountDeliveryRepository(sql),
      accountInvites: new AccountInviteMailQuery(accountInvites, setupLink),
      notifications: new SqliteNotificationRepository(sql),
    },
    options.mail,
  );
  const admins = new AccountManagement({
    store: accountStore,
    invites: accountInvites,
    events,
    work,
    mailer: mail.queue,
    sessions: adminSessions,
    twoFactor: accounts,
    scopes: accounts,
    setupLink,
  });
  const invitations = new InvitationService({
    repository: invitationRepository,
    events,
    work,
    users,
    fleets,
    settings,
    links,
    mailer: mail.queue,
    deliveries,
  });
  const agentRepository = new SqliteAgentRepository(sql);
  const brokerAgents = new BrokerAgentRepository(sql);
  const statusCounts = new SqliteStatusCounts(sql);
  const agents = new AgentService({ agents: agentRepository, events, work, users });
  const reports = new DeviceReports({ reports: new SqliteReportRepository(sql), events, work });
  const codeRepository = new SqliteCodeRepository(sql);
  const codes = new EnrollmentCodeService({ repository: codeRepository, events, work, users, fleets, settings, links });
  const approval = new ApprovalService({ agents: agentRepository, events, work, users, sessions });
  const figures = new DailyFigures(
    { repository: new FigureRepository(sql), feed, work, fleets },
    { now: options.now, sampleEveryMs: options.reportSampleEveryMs },
  );
  const deviceQueries = new DeviceQueryRepository(sql);
  // Devices inventoried before version keys existed (migration 23) are keyed once, here.
  await deviceQueries.backfill();
  const deviceFilter = new DeviceFilter({ queries: deviceQueries });
  const views = new ViewService({ store: new SqliteViewRepository(sql), filter: deviceFilter, events, work, fleets });
  const exportService = new ExportService({ repository: new ExportRepository(sql), invitations });
  // Tests reach these tables only through their repositories.
  const repositories = { invitations: invitationRepository, deliveries, codes: codeRepository };
  // A changed mail configuration may let waiting messages go, whichever node changed it.
  feed.subscribe(async (event, origin) => {
    if (origin !== 'elsewhere' || event.type !== 'settings.updated') return;
    // The SMTP password too (PostgreSQL: the database's, sealed by the cluster key).
    await mail.settings.reloadSecrets();
    mail.worker.kick();
  });
  return {
    work,
    links,
    events,
    feed,
    audit,
    accounts,
    admins,
    adminSessions,
    rates,
    signIns,
    settings,
    signInSettings,
    users,
    sessions,
    fleets,
    invitations,
    codes,
    approval,
    agents,
    deviceFilter,
    views,
    mail,
    reports,
    agentRepository,
    brokerAgents,
    statusCounts,
    figures,
    exports: exportService,
    repositories,
  };
}

export type DomainServices = Awaited<ReturnType<typeof createServices>>;

/** Enrollment hands out the broker's endpoint and credentials, so it is made once the broker runs. */
export function withEnrollment(services: DomainServices, broker: MqttBroker) {
  const { events, work, users, sessions, invitations, codes, agentRepository, fleets, settings, reports, links, rates } =
    services;
  const enrollment = new EnrollmentService({
    rows: agentRepository,
    events,
    work,
    users,
    sessions,
    invitations,
    codes,
    fleets,
    settings,
    reports,
    rates,
    broker: {
      endpoint: (tls) => broker.agentEndpoint(tls),
      credentialsIssued: (agentId, password) => broker.credentialsIssued(agentId, password),
      apiUrl: () => links.apiUrl(),
    },
  });
  return { ...services, enrollment };
}

export type Services = ReturnType<typeof withEnrollment>;
