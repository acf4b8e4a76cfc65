// How tests read and arrange rows of a running backend: through the repositories, never raw SQL.
import type { Db } from '../../src-main/backend/db/database.ts';
import { SqliteEventRepository } from '../../src-main/backend/events/event-repository.ts';
import { SqliteFleetRepository } from '../../src-main/backend/fleets/fleet-repository.ts';
import { SqliteSessionRepository } from '../../src-main/backend/sessions/session-repository.ts';
import { UserRepository } from '../../src-main/backend/sessions/user-repository.ts';

/** Over a test backend's own connection to its database (`t.db`). */
export function repositoriesOf({ db }: { db: Db }) {
  return {
    sessions: new SqliteSessionRepository(db),
    users: new UserRepository(db),
    fleets: new SqliteFleetRepository(db),
    events: new SqliteEventRepository(db),
  };
}
