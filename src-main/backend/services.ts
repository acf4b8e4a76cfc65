import { AgentService } from './agents/agents.ts';
import { ApprovalService } from './agents/approval.ts';
import { EnrollmentService, type BrokerTargets } from './agents/enrollment.ts';
import { DeviceReports } from './agents/reports.ts';
import { EnrollmentCodeService } from './codes/codes.ts';
import type { Db } from './db/database.ts';
import { EventLog } from './events/event-log.ts';
import { FleetService } from './fleets/fleets.ts';
import { InvitationService, type LinkTargets } from './invitations/invitations.ts';
import { createMailService, DeliveryRepository, type MailOptions } from './mail/index.ts';
import { SessionService, type SessionLimits } from './sessions/sessions.ts';
import { UserRepository } from './sessions/users.ts';
import { SettingsStore } from './settings/settings.ts';

/** Every service of the backend, wired once over one database. */
export function createServices(
  db: Db,
  targets: LinkTargets & BrokerTargets,
  mailOptions: MailOptions = {},
  limits: { sessions?: Partial<SessionLimits> | undefined } = {},
) {
  const events = new EventLog(db);
  const settings = new SettingsStore(db);
  const users = new UserRepository(db);
  const sessions = new SessionService(db, users, limits.sessions);
  const fleets = new FleetService(db, events);
  const deliveries = new DeliveryRepository(db);
  const invitations = new InvitationService({ db, events, users, fleets, settings, links: targets, deliveries });
  const mail = createMailService({ db, events, settings, invitations, deliveries }, mailOptions);
  const agents = new AgentService({ db, events, users });
  const reports = new DeviceReports({ db, events });
  const codes = new EnrollmentCodeService({ db, events, users, fleets, settings, links: targets });
  const approval = new ApprovalService({ db, events, users, sessions });
  const enrollment = new EnrollmentService({ db, events, users, sessions, invitations, codes, agents, fleets, settings, broker: targets, reports });
  return { db, links: targets as LinkTargets, events, settings, users, sessions, fleets, invitations, codes, approval, agents, enrollment, mail, reports };
}

export type Services = ReturnType<typeof createServices>;
