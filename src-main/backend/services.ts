import { AgentService } from './agents/agents.ts';
import { ApprovalService } from './agents/approval.ts';
import { EnrollmentService, type BrokerTargets } from './agents/enrollment.ts';
import { DeviceReports } from './agents/reports.ts';
import { BrokerAgentRepository } from './agents/broker-repository.ts';
import { SqliteReportRepository } from './agents/report-repository.ts';
import { SqliteAgentRepository } from './agents/repository.ts';
import { EnrollmentCodeService } from './codes/codes.ts';
import type { Db } from './db/database.ts';
import { UnitOfWork } from './db/unit-of-work.ts';
import { EventLog } from './events/event-log.ts';
import { SqliteEventRepository } from './events/event-repository.ts';
import { SqliteFleetRepository } from './fleets/fleet-repository.ts';
import { FleetService } from './fleets/fleets.ts';
import { InvitationService, type LinkTargets } from './invitations/invitations.ts';
import { createMailService, DeliveryRepository, type MailOptions } from './mail/index.ts';
import { SqliteSessionRepository } from './sessions/session-repository.ts';
import { SessionService, type SessionLimits } from './sessions/sessions.ts';
import { UserRepository } from './sessions/users.ts';
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
  const events = new EventLog(new SqliteEventRepository(db), work);
  const settings = new SettingsStore(db);
  const users = new UserRepository(db);
  const sessions = new SessionService({ store: new SqliteSessionRepository(db), users, work }, limits.sessions);
  const fleets = new FleetService({ store: new SqliteFleetRepository(db), events, work });
  const deliveries = new DeliveryRepository(db);
  const invitations = new InvitationService({ db, events, work, users, fleets, settings, links: targets, deliveries });
  const mail = createMailService({ db, events, work, settings, invitations, deliveries }, mailOptions);
  const agentRepository = new SqliteAgentRepository(db);
  const brokerAgents = new BrokerAgentRepository(db);
  const statusCounts = new SqliteStatusCounts(db);
  const agents = new AgentService({ agents: agentRepository, events, work, users });
  const reports = new DeviceReports({ reports: new SqliteReportRepository(db), events, work });
  const codes = new EnrollmentCodeService({ db, events, work, users, fleets, settings, links: targets });
  const approval = new ApprovalService({ agents: agentRepository, events, work, users, sessions });
  const enrollment = new EnrollmentService({ rows: agentRepository, events, work, users, sessions, invitations, codes, fleets, settings, broker: targets, reports });
  return { db, work, links: targets as LinkTargets, events, settings, users, sessions, fleets, invitations, codes, approval, agents, enrollment, mail, reports, agentRepository, brokerAgents, statusCounts };
}

export type Services = ReturnType<typeof createServices>;
