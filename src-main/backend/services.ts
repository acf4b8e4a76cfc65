import { AgentService } from './agents/agents.ts';
import { ApprovalService } from './agents/approval.ts';
import { EnrollmentService, type BrokerTargets } from './agents/enrollment.ts';
import { DeviceReports } from './agents/reports.ts';
import { BrokerAgentRepository } from './agents/broker-repository.ts';
import { SqliteReportRepository } from './agents/report-repository.ts';
import { SqliteAgentRepository } from './agents/repository.ts';
import { EnrollmentCodeService } from './codes/codes.ts';
import { SqliteCodeRepository } from './codes/repository.ts';
import type { Db } from './db/database.ts';
import { UnitOfWork } from './db/unit-of-work.ts';
import { EventLog } from './events/event-log.ts';
import { FleetService } from './fleets/fleets.ts';
import { InvitationService, type LinkTargets } from './invitations/invitations.ts';
import { InvitationMailQuery } from './invitations/mail-query.ts';
import { SqliteInvitationRepository } from './invitations/repository.ts';
import { createMail, SqliteDeliveryRepository, type MailOptions } from './mail/index.ts';
import { SessionService, type SessionLimits } from './sessions/sessions.ts';
import { UserRepository } from './sessions/users.ts';
import { SqliteSettingsRepository } from './settings/repository.ts';
import { SettingsStore } from './settings/settings.ts';
import { SqliteStatusCounts } from './status/repository.ts';

/** Every service of the backend, wired once over one database. */
export function createServices(
  db: Db,
  targets: LinkTargets & BrokerTargets,
  mailOptions: MailOptions = {},
  limits: { sessions?: Partial<SessionLimits> | undefined } = {},
) {
  const work = new UnitOfWork(db);
  const events = new EventLog(db, work);
  const settings = new SettingsStore(new SqliteSettingsRepository(db), work);
  const codeRepository = new SqliteCodeRepository(db);
  const users = new UserRepository(db);
  const sessions = new SessionService(db, users, limits.sessions);
  const fleets = new FleetService(db, events, work);
  const deliveries = new SqliteDeliveryRepository(db);
  const invitationRepository = new SqliteInvitationRepository(db);
  const mailable = new InvitationMailQuery({ repository: invitationRepository, settings, links: targets });
  const mail = createMail({ db, events, work, settings, invitations: mailable, deliveries }, mailOptions);
  const invitations = new InvitationService({ repository: invitationRepository, events, work, users, fleets, settings, links: targets, mailer: mail.queue, deliveries });
  const agentRepository = new SqliteAgentRepository(db);
  const brokerAgents = new BrokerAgentRepository(db);
  const statusCounts = new SqliteStatusCounts(db);
  const agents = new AgentService({ agents: agentRepository, events, work, users });
  const reports = new DeviceReports({ reports: new SqliteReportRepository(db), events, work });
  const codes = new EnrollmentCodeService({ repository: codeRepository, events, work, users, fleets, settings, links: targets });
  const approval = new ApprovalService({ agents: agentRepository, events, work, users, sessions });
  const enrollment = new EnrollmentService({ rows: agentRepository, events, work, users, sessions, invitations, codes, fleets, settings, broker: targets, reports });
  // Tests reach these tables only through their repositories.
  const repositories = { invitations: invitationRepository, deliveries, codes: codeRepository };
  return { db, work, links: targets as LinkTargets, events, settings, users, sessions, fleets, invitations, codes, approval, agents, enrollment, mail, reports, agentRepository, brokerAgents, statusCounts, repositories };
}

export type Services = ReturnType<typeof createServices>;
