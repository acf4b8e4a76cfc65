// The counts the admin's /status reports, read in one statement, within the request's fleets.
import { ENROLL_STATUS } from '../agents/status.ts';
import type { Sql } from '../db/sql.ts';
import type { StatusCounts } from '../../../src-shared/contract/index.ts';
import { inFleetsSql } from '../fleets/fleet-repository.ts';

/** The counts as GET /api/status sends them: the contract's StatusCounts. */
export type { StatusCounts };

export interface StatusCountsRepository {
  /** `fleets` (fleets/scope.ts fleetScopeParam): null, every fleet; else a JSON array of the fleets counted. */
  counts(fleets: string | null): Promise<StatusCounts>;
}

export class SqliteStatusCounts implements StatusCountsRepository {
  private readonly sql: Sql;
  private readonly statement: string;

  constructor(sql: Sql) {
    this.sql = sql;
    this.statement = `WITH i AS (SELECT * FROM invitations WHERE ${inFleetsSql('fleet_id')}),
            a AS (SELECT * FROM agents WHERE ${inFleetsSql('fleet_id')}),
            c AS (SELECT * FROM enrollment_codes WHERE ${inFleetsSql('fleet_id')})
       SELECT
         (SELECT count(*) FROM i) AS invitations,
         (SELECT count(*) FROM i WHERE status = 'pending' AND expires_at > @now) AS pending,
         (SELECT count(*) FROM i WHERE status = 'done') AS used,
         (SELECT count(*) FROM a) AS agents,
         (SELECT count(*) FROM a WHERE enroll_status = '${ENROLL_STATUS.enrolled}') AS enrolled,
         (SELECT count(*) FROM a WHERE is_online = 1) AS online,
         (SELECT count(*) FROM a WHERE enroll_status = '${ENROLL_STATUS.pendingApproval}') AS pending_approval,
         (SELECT count(*) FROM c) AS codes,
         (SELECT count(*) FROM a WHERE enrollment_code_id IS NOT NULL) AS code_devices,
         (SELECT count(*) FROM a WHERE enrollment_code_id IS NOT NULL AND enroll_status = '${ENROLL_STATUS.enrolled}') AS code_enrolled`;
  }

  async counts(fleets: string | null): Promise<StatusCounts> {
    return (await this.sql.get<StatusCounts>(this.statement, { fleets, now: new Date().toISOString() }))!;
  }
}
