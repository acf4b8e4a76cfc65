// How tests read and arrange rows of a running backend: through the repositories, never raw SQL.
import type { RunningBackend } from '../../src-main/backend/server.ts';
import { SqliteEventRepository } from '../../src-main/backend/events/event-repository.ts';
import { SqliteFleetRepository } from '../../src-main/backend/fleets/fleet-repository.ts';
import { SqliteSessionRepository } from '../../src-main/backend/sessions/session-repository.ts';
import { UserRepository } from '../../src-main/backend/sessions/users.ts';

export function repositoriesOf(backend: RunningBackend) {
  const db = backend.services.db;
  return {
    sessions: new SqliteSessionRepository(db),
    users: new UserRepository(db),
    fleets: new SqliteFleetRepository(db),
    events: new SqliteEventRepository(db),
  };
}
