// How tests read and arrange rows of a running backend: through the repositories, never raw SQL.
import type { Sql } from '../../src-main/backend/db/sql.ts';
import { SqliteEventRepository } from '../../src-main/backend/events/event-repository.ts';
import { SqliteFleetRepository } from '../../src-main/backend/fleets/fleet-repository.ts';
import { SqliteSessionRepository } from '../../src-main/backend/sessions/session-repository.ts';
import { UserRepository } from '../../src-main/backend/sessions/user-repository.ts';

/** Over a test backend's own connection to its database (`t.sql`). */
export function repositoriesOf({ sql }: { sql: Sql }) {
  return {
    sessions: new SqliteSessionRepository(sql),
    users: new UserRepository(sql),
    fleets: new SqliteFleetRepository(sql),
    events: new SqliteEventRepository(sql),
  };
}
