// The counts the admin's /status reports, read in one statement.
import { ENROLL_STATUS } from '../agents/status.ts';
import type { Db } from '../db/database.ts';
import type { StatusCounts } from '../../../src-shared/contract/index.ts';

/** The counts as GET /api/status sends them: the contract's StatusCounts. */
export type { StatusCounts };

export interface StatusCountsRepository {
  counts(): StatusCounts;
}

export class SqliteStatusCounts implements StatusCountsRepository {
  private readonly statement;

  constructor(db: Db) {
    this.statement = db.prepare(
      `SELECT
         (SELECT count(*) FROM invitations) AS invitations,
         (SELECT count(*) FROM invitations WHERE status = 'pending' AND expires_at > strftime('%Y-%m-%dT%H:%M:%fZ')) AS pending,
         (SELECT count(*) FROM invitations WHERE status = 'done') AS used,
         (SELECT count(*) FROM agents) AS agents,
         (SELECT count(*) FROM agents WHERE enroll_status = '${ENROLL_STATUS.enrolled}') AS enrolled,
         (SELECT count(*) FROM agents WHERE is_online = 1) AS online,
         (SELECT count(*) FROM agents WHERE enroll_status = '${ENROLL_STATUS.pendingApproval}') AS pending_approval,
         (SELECT count(*) FROM enrollment_codes) AS codes,
         (SELECT count(*) FROM agents WHERE enrollment_code_id IS NOT NULL) AS code_devices,
         (SELECT count(*) FROM agents WHERE enrollment_code_id IS NOT NULL AND enroll_status = '${ENROLL_STATUS.enrolled}') AS code_enrolled`,
    );
  }

  counts(): StatusCounts {
    return this.statement.get() as StatusCounts;
  }
}
