/**
 * Versioned schema. Each entry runs once, in its own transaction, and bumps PRAGMA user_version.
 * Never edit a migration that has shipped: append a new one.
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const migrations: Migration[] = [
  {
    version: 1,
    name: 'initial schema',
    sql: /* sql */ `
      CREATE TABLE entities (
        id          INTEGER PRIMARY KEY,
        name        TEXT NOT NULL,
        parent_id   INTEGER REFERENCES entities(id),
        created_at  TEXT NOT NULL
      );

      CREATE TABLE profiles (
        id          INTEGER PRIMARY KEY,
        name        TEXT NOT NULL UNIQUE,
        is_guest    INTEGER NOT NULL DEFAULT 0 CHECK (is_guest IN (0, 1)),
        is_default  INTEGER NOT NULL DEFAULT 0 CHECK (is_default IN (0, 1))
      );

      -- login = email for people, lower-cased; unique case-insensitively.
      CREATE TABLE users (
        id                  INTEGER PRIMARY KEY,
        login               TEXT NOT NULL,
        kind                TEXT NOT NULL CHECK (kind IN ('person', 'agent')),
        email               TEXT,
        firstname           TEXT,
        lastname            TEXT,
        user_token          TEXT NOT NULL UNIQUE,
        default_profile_id  INTEGER NOT NULL REFERENCES profiles(id),
        entity_id           INTEGER NOT NULL REFERENCES entities(id),
        created_at          TEXT NOT NULL
      );
      CREATE UNIQUE INDEX users_login_nocase ON users(login COLLATE NOCASE);

      CREATE TABLE profile_assignments (
        user_id     INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        profile_id  INTEGER NOT NULL REFERENCES profiles(id),
        entity_id   INTEGER NOT NULL REFERENCES entities(id),
        PRIMARY KEY (user_id, profile_id, entity_id)
      );

      CREATE TABLE sessions (
        token              TEXT PRIMARY KEY,
        user_id            INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        active_profile_id  INTEGER NOT NULL REFERENCES profiles(id),
        entity_id          INTEGER NOT NULL REFERENCES entities(id),
        created_at         TEXT NOT NULL,
        last_used_at       TEXT NOT NULL
      );
      CREATE INDEX sessions_user ON sessions(user_id);

      CREATE TABLE fleets (
        id          INTEGER PRIMARY KEY,
        entity_id   INTEGER NOT NULL REFERENCES entities(id),
        name        TEXT NOT NULL,
        is_default  INTEGER NOT NULL DEFAULT 0 CHECK (is_default IN (0, 1)),
        created_at  TEXT NOT NULL,
        UNIQUE (entity_id, name COLLATE NOCASE)
      );
      CREATE UNIQUE INDEX fleets_one_default ON fleets(entity_id) WHERE is_default = 1;

      CREATE TABLE computers (
        id          INTEGER PRIMARY KEY,
        entity_id   INTEGER NOT NULL REFERENCES entities(id),
        name        TEXT NOT NULL,
        serial      TEXT,
        uuid        TEXT,
        user_id     INTEGER REFERENCES users(id) ON DELETE SET NULL,
        created_at  TEXT NOT NULL,
        updated_at  TEXT NOT NULL
      );

      CREATE TABLE agents (
        id                   INTEGER PRIMARY KEY,
        entity_id            INTEGER NOT NULL REFERENCES entities(id),
        computer_id          INTEGER NOT NULL REFERENCES computers(id),
        fleet_id             INTEGER NOT NULL REFERENCES fleets(id),
        account_user_id      INTEGER NOT NULL REFERENCES users(id),
        enrolled_by_user_id  INTEGER REFERENCES users(id) ON DELETE SET NULL,
        invitation_id        INTEGER,
        name                 TEXT NOT NULL,
        serial               TEXT,
        uuid                 TEXT,
        version              TEXT NOT NULL,
        type                 TEXT NOT NULL CHECK (type IN ('android', 'apple')),
        firstname            TEXT,
        lastname             TEXT,
        enroll_status        TEXT NOT NULL DEFAULT 'enrolled',
        wipe                 INTEGER NOT NULL DEFAULT 0,
        lock                 INTEGER NOT NULL DEFAULT 0,
        is_online            INTEGER NOT NULL DEFAULT 0,
        last_report          TEXT,
        last_contact         TEXT,
        certificate          TEXT NOT NULL DEFAULT '',
        topic                TEXT NOT NULL,
        mqtt_login           TEXT NOT NULL,
        mqtt_password_hash   TEXT,
        created_at           TEXT NOT NULL,
        updated_at           TEXT NOT NULL,
        CHECK (serial IS NOT NULL OR uuid IS NOT NULL)
      );
      CREATE UNIQUE INDEX agents_entity_serial ON agents(entity_id, serial) WHERE serial IS NOT NULL;
      CREATE UNIQUE INDEX agents_entity_uuid ON agents(entity_id, uuid) WHERE uuid IS NOT NULL;
      CREATE INDEX agents_mqtt_login ON agents(mqtt_login);
      CREATE INDEX agents_fleet ON agents(fleet_id);

      CREATE TABLE invitations (
        id            INTEGER PRIMARY KEY,
        entity_id     INTEGER NOT NULL REFERENCES entities(id),
        user_id       INTEGER NOT NULL REFERENCES users(id),
        fleet_id      INTEGER NOT NULL REFERENCES fleets(id),
        email         TEXT NOT NULL,
        firstname     TEXT,
        lastname      TEXT,
        token         TEXT NOT NULL UNIQUE,
        status        TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'revoked')),
        created_at    TEXT NOT NULL,
        expires_at    TEXT NOT NULL,
        used_at       TEXT,
        last_used_at  TEXT,
        revoked_at    TEXT,
        agent_id      INTEGER REFERENCES agents(id) ON DELETE SET NULL
      );
      CREATE INDEX invitations_email ON invitations(email COLLATE NOCASE);
      CREATE INDEX invitations_status ON invitations(status, expires_at);

      -- Every enrollment attempt that names an invitation: refusals and the one success.
      CREATE TABLE invitation_log (
        id             INTEGER PRIMARY KEY,
        invitation_id  INTEGER NOT NULL REFERENCES invitations(id) ON DELETE CASCADE,
        at             TEXT NOT NULL,
        outcome        TEXT NOT NULL CHECK (outcome IN ('refused', 'used')),
        code           TEXT,
        message        TEXT NOT NULL,
        remote_addr    TEXT,
        email          TEXT,
        serial         TEXT,
        uuid           TEXT
      );
      CREATE INDEX invitation_log_invitation ON invitation_log(invitation_id);

      CREATE TABLE files (
        id            INTEGER PRIMARY KEY,
        entity_id     INTEGER NOT NULL REFERENCES entities(id),
        name          TEXT NOT NULL,
        size          INTEGER NOT NULL,
        mime_type     TEXT NOT NULL,
        sha256        TEXT NOT NULL,
        storage_name  TEXT NOT NULL UNIQUE,
        created_at    TEXT NOT NULL,
        updated_at    TEXT NOT NULL
      );

      CREATE TABLE packages (
        id            INTEGER PRIMARY KEY,
        entity_id     INTEGER NOT NULL REFERENCES entities(id),
        name          TEXT NOT NULL,
        size          INTEGER NOT NULL,
        mime_type     TEXT NOT NULL,
        sha256        TEXT NOT NULL,
        storage_name  TEXT NOT NULL UNIQUE,
        created_at    TEXT NOT NULL,
        updated_at    TEXT NOT NULL
      );

      -- Append-only history; no foreign keys so history outlives what it mentions.
      CREATE TABLE events (
        id             INTEGER PRIMARY KEY,
        at             TEXT NOT NULL,
        type           TEXT NOT NULL,
        entity_id      INTEGER,
        invitation_id  INTEGER,
        agent_id       INTEGER,
        message        TEXT NOT NULL,
        data           TEXT
      );
      CREATE INDEX events_agent ON events(agent_id) WHERE agent_id IS NOT NULL;
      CREATE INDEX events_invitation ON events(invitation_id) WHERE invitation_id IS NOT NULL;
      CREATE TRIGGER events_no_update BEFORE UPDATE ON events
        BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
      CREATE TRIGGER events_no_delete BEFORE DELETE ON events
        BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;

      CREATE TABLE settings (
        key    TEXT PRIMARY KEY,
        value  TEXT NOT NULL
      );

      INSERT INTO entities (id, name, parent_id, created_at) VALUES (1, 'Root entity', NULL, strftime('%Y-%m-%dT%H:%M:%fZ'));
      INSERT INTO profiles (id, name, is_guest, is_default) VALUES (1, 'Self-Service', 0, 1);
      INSERT INTO profiles (id, name, is_guest, is_default) VALUES (2, 'MDM guest', 1, 0);
      INSERT INTO profiles (id, name, is_guest, is_default) VALUES (3, 'MDM agent', 0, 0);
      INSERT INTO fleets (entity_id, name, is_default, created_at) VALUES (1, 'Default fleet', 1, strftime('%Y-%m-%dT%H:%M:%fZ'));
    `,
  },
  {
    version: 2,
    name: 'invitation mail deliveries',
    sql: /* sql */ `
      -- The email of an invitation: one row per invitation, the persisted queue of the mail worker.
      -- 'sending' rows found at start were interrupted and go back to 'queued'.
      CREATE TABLE mail_deliveries (
        invitation_id  INTEGER PRIMARY KEY REFERENCES invitations(id) ON DELETE CASCADE,
        state          TEXT NOT NULL CHECK (state IN ('queued', 'sending', 'sent', 'failed', 'outbox')),
        batch_id       TEXT,
        attempts       INTEGER NOT NULL DEFAULT 0,
        error          TEXT,
        response       TEXT,
        message_id     TEXT,
        outbox_file    TEXT,
        queued_at      TEXT NOT NULL,
        updated_at     TEXT NOT NULL,
        sent_at        TEXT
      );
      CREATE INDEX mail_deliveries_queue ON mail_deliveries(state, queued_at);
      CREATE INDEX mail_deliveries_batch ON mail_deliveries(batch_id) WHERE batch_id IS NOT NULL;
    `,
  },
  {
    version: 3,
    name: 'unique MQTT logins, sessions tied to the enrollment they made',
    sql: /* sql */ `
      -- A uuid-only device whose uuid was another device's serial got the same MQTT login and topic,
      -- so one device received the other's commands. Of each colliding group the oldest agent keeps its
      -- login; the later ones get a login and topic no device can use ('#' is a wildcard) until an
      -- admin removes one of them. Each such agent gets an event saying so.
      INSERT INTO events (at, type, entity_id, agent_id, message, data)
        SELECT strftime('%Y-%m-%dT%H:%M:%fZ'), 'agent.login_collision', a.entity_id, a.id,
               'MQTT login ' || a.mqtt_login || ' of ' || a.name || ' was also the login of agent #' ||
                 (SELECT min(o.id) FROM agents o WHERE o.mqtt_login = a.mqtt_login) ||
                 ': its MQTT access is disabled; remove one of the two devices and enroll it again',
               json_object('login', a.mqtt_login, 'topic', a.topic)
        FROM agents a
        WHERE EXISTS (SELECT 1 FROM agents o WHERE o.mqtt_login = a.mqtt_login AND o.id < a.id);
      UPDATE agents SET mqtt_login = mqtt_login || '#' || id, topic = topic || '#' || id, mqtt_password_hash = NULL
        WHERE EXISTS (SELECT 1 FROM agents o WHERE o.mqtt_login = agents.mqtt_login AND o.id < agents.id);
      DROP INDEX agents_mqtt_login;
      CREATE UNIQUE INDEX agents_mqtt_login ON agents(mqtt_login);
      -- A session of an agent's account finds its agent (Computer, Entity, fleet it may read).
      CREATE INDEX agents_account ON agents(account_user_id);

      -- The agent a person's session enrolled, and when: only that session, for a short while,
      -- reads the agent's record (the user token of a used QR code yields no secrets).
      ALTER TABLE sessions ADD COLUMN agent_id INTEGER;
      ALTER TABLE sessions ADD COLUMN enrolled_at TEXT;
      CREATE INDEX sessions_user_used ON sessions(user_id, last_used_at);
      DROP INDEX sessions_user;
    `,
  },
  {
    version: 4,
    name: 'flyve dialect: device details, inventories, positions',
    sql: /* sql */ `
      -- Extra fields of the reference agents' create input.
      ALTER TABLE agents ADD COLUMN phone TEXT;
      ALTER TABLE agents ADD COLUMN has_system_permission INTEGER;
      ALTER TABLE agents ADD COLUMN notification_type TEXT;
      ALTER TABLE agents ADD COLUMN notification_token TEXT;
      -- From the last inventory, for the device list (the rest is read from agent_inventories).
      ALTER TABLE agents ADD COLUMN model TEXT;
      ALTER TABLE agents ADD COLUMN manufacturer TEXT;
      ALTER TABLE agents ADD COLUMN os_name TEXT;
      ALTER TABLE agents ADD COLUMN os_version TEXT;

      -- The last FusionInventory XML of each agent and its parsed summary (JSON).
      CREATE TABLE agent_inventories (
        agent_id     INTEGER PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
        xml          TEXT NOT NULL,
        summary      TEXT NOT NULL,
        source       TEXT NOT NULL CHECK (source IN ('enrollment', 'http', 'mqtt')),
        received_at  TEXT NOT NULL
      );

      -- Positions reported by agents; latitude/longitude NULL when the device said its GPS is off.
      CREATE TABLE geolocations (
        id           INTEGER PRIMARY KEY,
        agent_id     INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
        computer_id  INTEGER NOT NULL,
        latitude     REAL,
        longitude    REAL,
        located_at   TEXT NOT NULL,
        source       TEXT NOT NULL CHECK (source IN ('http', 'mqtt')),
        received_at  TEXT NOT NULL
      );
      CREATE INDEX geolocations_agent ON geolocations(agent_id, id);
    `,
  },
  {
    version: 5,
    name: 'deployments and device tasks',
    sql: /* sql */ `
      -- What a device needs to install an application package (read from an APK, or given by the admin).
      ALTER TABLE packages ADD COLUMN package_name TEXT;
      ALTER TABLE packages ADD COLUMN version_code INTEGER;
      ALTER TABLE packages ADD COLUMN version_name TEXT;
      ALTER TABLE packages ADD COLUMN label TEXT;
      ALTER TABLE packages ADD COLUMN icon TEXT;
      ALTER TABLE files ADD COLUMN version INTEGER NOT NULL DEFAULT 1;

      -- A policy applied to a fleet or to one agent, published retained on
      -- <fleet or agent topic>/Policy/<policy>/Task/<id>. The item and target are not foreign
      -- keys: a deployment's history outlives a deleted file or fleet (the names are kept).
      CREATE TABLE deployments (
        id                INTEGER PRIMARY KEY,
        entity_id         INTEGER NOT NULL REFERENCES entities(id),
        policy            TEXT NOT NULL CHECK (policy IN ('deployApp', 'deployFile', 'removeApp', 'removeFile')),
        item_kind         TEXT CHECK (item_kind IN ('file', 'package')),
        item_id           INTEGER,
        item_name         TEXT NOT NULL,
        fleet_id          INTEGER,
        agent_id          INTEGER,
        target_name       TEXT NOT NULL,
        destination       TEXT,
        remove_on_delete  INTEGER NOT NULL DEFAULT 0 CHECK (remove_on_delete IN (0, 1)),
        topic             TEXT NOT NULL,
        payload           TEXT NOT NULL,
        state             TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'removed')),
        removed_by        INTEGER,
        created_at        TEXT NOT NULL,
        removed_at        TEXT,
        CHECK ((fleet_id IS NULL) <> (agent_id IS NULL))
      );
      CREATE INDEX deployments_fleet ON deployments(fleet_id, state) WHERE fleet_id IS NOT NULL;
      CREATE INDEX deployments_agent ON deployments(agent_id, state) WHERE agent_id IS NOT NULL;

      -- One task per device in a deployment's scope; its status history is kept in task_history.
      CREATE TABLE deployment_tasks (
        id             INTEGER PRIMARY KEY,
        deployment_id  INTEGER NOT NULL REFERENCES deployments(id) ON DELETE CASCADE,
        agent_id       INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
        status         TEXT NOT NULL CHECK (status IN ('pending', 'received', 'in progress', 'waiting', 'done', 'failed', 'canceled')),
        reason         TEXT,
        created_at     TEXT NOT NULL,
        updated_at     TEXT NOT NULL,
        UNIQUE (deployment_id, agent_id)
      );
      CREATE INDEX deployment_tasks_agent ON deployment_tasks(agent_id);

      CREATE TABLE task_history (
        id       INTEGER PRIMARY KEY,
        task_id  INTEGER NOT NULL REFERENCES deployment_tasks(id) ON DELETE CASCADE,
        status   TEXT NOT NULL,
        reason   TEXT,
        source   TEXT NOT NULL CHECK (source IN ('server', 'mqtt', 'http')),
        at       TEXT NOT NULL
      );
      CREATE INDEX task_history_task ON task_history(task_id);
    `,
  },
  {
    version: 10,
    name: 'enrollment codes',
    sql: /* sql */ `
      -- One code, many devices: each device is tied to the person whose email it gives.
      CREATE TABLE enrollment_codes (
        id               INTEGER PRIMARY KEY,
        entity_id        INTEGER NOT NULL REFERENCES entities(id),
        fleet_id         INTEGER NOT NULL REFERENCES fleets(id),
        -- The account whose user token the deeplink carries (field 2); never the device's owner.
        account_user_id  INTEGER NOT NULL REFERENCES users(id),
        name             TEXT NOT NULL,
        token            TEXT NOT NULL UNIQUE,
        domains          TEXT NOT NULL DEFAULT '[]', -- JSON array of lower-case domains; empty = any
        max_uses         INTEGER CHECK (max_uses IS NULL OR max_uses >= 1),
        uses             INTEGER NOT NULL DEFAULT 0 CHECK (max_uses IS NULL OR uses <= max_uses),
        approval         TEXT NOT NULL DEFAULT 'auto' CHECK (approval IN ('auto', 'manual')),
        created_at       TEXT NOT NULL,
        expires_at       TEXT,
        revoked_at       TEXT,
        rotated_at       TEXT,
        last_used_at     TEXT
      );

      -- Every agent creation that names a code: refusals (with the email given) and uses.
      CREATE TABLE enrollment_code_log (
        id             INTEGER PRIMARY KEY,
        code_id        INTEGER NOT NULL REFERENCES enrollment_codes(id) ON DELETE CASCADE,
        at             TEXT NOT NULL,
        outcome        TEXT NOT NULL CHECK (outcome IN ('refused', 'used')),
        code           TEXT,
        message        TEXT NOT NULL,
        remote_addr    TEXT,
        email          TEXT,
        serial         TEXT,
        uuid           TEXT,
        user_id        INTEGER REFERENCES users(id) ON DELETE SET NULL,
        agent_id       INTEGER REFERENCES agents(id) ON DELETE SET NULL,
        -- SHA-256 of the session that used the code: it alone may read that agent's record.
        session_hash   TEXT
      );
      CREATE INDEX enrollment_codes_account ON enrollment_codes(account_user_id);
      CREATE INDEX enrollment_code_log_code ON enrollment_code_log(code_id);
      CREATE INDEX enrollment_code_log_agent ON enrollment_code_log(agent_id) WHERE agent_id IS NOT NULL;

      ALTER TABLE agents ADD COLUMN enrollment_code_id INTEGER REFERENCES enrollment_codes(id) ON DELETE SET NULL;
      CREATE INDEX agents_enroll_status ON agents(enroll_status) WHERE enroll_status = 'pending_approval';
    `,
  },
  {
    version: 11,
    name: 'mail retry schedule',
    // A delivery that failed for a transient reason stays 'queued' with the time of its next
    // attempt; keeping that time in the database lets a restart keep the schedule.
    sql: `
      ALTER TABLE mail_deliveries ADD COLUMN retry_at TEXT;
      CREATE INDEX mail_deliveries_retry ON mail_deliveries(retry_at) WHERE retry_at IS NOT NULL;
    `,
  },
  {
    version: 12,
    name: 'policy assignments: value policies beside deployments, incompatible and overriden tasks',
    // Every policy of the catalogue is assigned the way deployments were: a row of `deployments`
    // (now any catalogue symbol, checked by the service against the contract's catalogue; `value`
    // holds the JSON value of the value policies) and one task per device. SQLite cannot change a
    // CHECK in place: the three tables are rebuilt (new ones filled, old ones dropped children
    // first, the new ones renamed; the renames carry the foreign keys along).
    sql: /* sql */ `
      CREATE TABLE deployments_new (
        id                INTEGER PRIMARY KEY,
        entity_id         INTEGER NOT NULL REFERENCES entities(id),
        policy            TEXT NOT NULL CHECK (length(policy) BETWEEN 1 AND 64),
        value             TEXT,
        item_kind         TEXT CHECK (item_kind IN ('file', 'package')),
        item_id           INTEGER,
        item_name         TEXT NOT NULL,
        fleet_id          INTEGER,
        agent_id          INTEGER,
        target_name       TEXT NOT NULL,
        destination       TEXT,
        remove_on_delete  INTEGER NOT NULL DEFAULT 0 CHECK (remove_on_delete IN (0, 1)),
        topic             TEXT NOT NULL,
        payload           TEXT NOT NULL,
        state             TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'removed')),
        removed_by        INTEGER,
        created_at        TEXT NOT NULL,
        removed_at        TEXT,
        CHECK ((fleet_id IS NULL) <> (agent_id IS NULL))
      );
      INSERT INTO deployments_new (id, entity_id, policy, value, item_kind, item_id, item_name, fleet_id, agent_id, target_name,
          destination, remove_on_delete, topic, payload, state, removed_by, created_at, removed_at)
        SELECT id, entity_id, policy, NULL, item_kind, item_id, item_name, fleet_id, agent_id, target_name,
          destination, remove_on_delete, topic, payload, state, removed_by, created_at, removed_at FROM deployments;

      CREATE TABLE deployment_tasks_new (
        id             INTEGER PRIMARY KEY,
        deployment_id  INTEGER NOT NULL REFERENCES deployments_new(id) ON DELETE CASCADE,
        agent_id       INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
        status         TEXT NOT NULL CHECK (status IN ('pending', 'received', 'in progress', 'waiting', 'done', 'failed', 'canceled',
                         'incompatible', 'overriden')),
        reason         TEXT,
        created_at     TEXT NOT NULL,
        updated_at     TEXT NOT NULL,
        UNIQUE (deployment_id, agent_id)
      );
      INSERT INTO deployment_tasks_new SELECT id, deployment_id, agent_id, status, reason, created_at, updated_at FROM deployment_tasks;

      CREATE TABLE task_history_new (
        id       INTEGER PRIMARY KEY,
        task_id  INTEGER NOT NULL REFERENCES deployment_tasks_new(id) ON DELETE CASCADE,
        status   TEXT NOT NULL,
        reason   TEXT,
        source   TEXT NOT NULL CHECK (source IN ('server', 'mqtt', 'http')),
        at       TEXT NOT NULL
      );
      INSERT INTO task_history_new SELECT id, task_id, status, reason, source, at FROM task_history;

      DROP TABLE task_history;
      DROP TABLE deployment_tasks;
      DROP TABLE deployments;
      ALTER TABLE deployments_new RENAME TO deployments;
      ALTER TABLE deployment_tasks_new RENAME TO deployment_tasks;
      ALTER TABLE task_history_new RENAME TO task_history;

      CREATE INDEX deployments_fleet ON deployments(fleet_id, state) WHERE fleet_id IS NOT NULL;
      CREATE INDEX deployments_agent ON deployments(agent_id, state) WHERE agent_id IS NOT NULL;
      CREATE INDEX deployment_tasks_agent ON deployment_tasks(agent_id);
      CREATE INDEX task_history_task ON task_history(task_id);
    `,
  },
  {
    version: 13,
    name: 'console sessions kept on the server; agent sessions know their address',
    // The console's cookie is a random id whose SHA-256 is kept here (never the id itself): new on
    // every sign-in, ended on sign-out and on expiry. account_id stays null until admins have accounts.
    // An agent session's client address bounds the sessions an enrollment code opens from one address.
    sql: `
      CREATE TABLE admin_sessions (
        id_hash       TEXT PRIMARY KEY,
        account_id    INTEGER,
        credential    TEXT NOT NULL,
        address       TEXT,
        user_agent    TEXT,
        created_at    TEXT NOT NULL,
        last_used_at  TEXT NOT NULL,
        expires_at    TEXT NOT NULL
      );
      CREATE INDEX admin_sessions_expiry ON admin_sessions(expires_at);

      ALTER TABLE sessions ADD COLUMN address TEXT;
      CREATE INDEX sessions_user_address ON sessions(user_id, address, created_at);
    `,
  },
  {
    version: 14,
    name: 'admin accounts and personal API tokens',
    // Admins are people: an email (null for the desktop's owner until one is chosen), a display name,
    // a role and an Argon2id password hash (null until set). API tokens belong to an account and are
    // kept as SHA-256 hashes; the data dir's admin token is one of them, the owner's.
    sql: `
      CREATE TABLE admin_accounts (
        id               INTEGER PRIMARY KEY,
        email            TEXT,
        display_name     TEXT NOT NULL,
        role             TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'operator', 'observer')),
        password_hash    TEXT,
        disabled         INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1)),
        created_at       TEXT NOT NULL,
        last_sign_in_at  TEXT
      );
      CREATE UNIQUE INDEX admin_accounts_email ON admin_accounts(email COLLATE NOCASE) WHERE email IS NOT NULL;

      CREATE TABLE api_tokens (
        id            INTEGER PRIMARY KEY,
        account_id    INTEGER NOT NULL REFERENCES admin_accounts(id) ON DELETE CASCADE,
        name          TEXT NOT NULL,
        role          TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'operator', 'observer')),
        kind          TEXT NOT NULL DEFAULT 'personal' CHECK (kind IN ('personal', 'data-dir')),
        token_hash    TEXT NOT NULL UNIQUE,
        created_at    TEXT NOT NULL,
        expires_at    TEXT,
        last_used_at  TEXT,
        revoked_at    TEXT
      );
      CREATE INDEX api_tokens_account ON api_tokens(account_id);
    `,
  },
  {
    version: 15,
    name: 'a task knows when its item was downloaded completely',
    // Set when the answer carrying the last byte of a deployed file or package was sent in full to
    // the device's session while its task was open: "downloaded, not confirmed" until it reports.
    sql: `ALTER TABLE deployment_tasks ADD COLUMN downloaded_at TEXT;`,
  },
  {
    version: 16,
    name: 'audit trail',
    // Who did what, on which object, when and from where: written in the transaction of the change.
    // The actor's names are copied (an account or token deleted later still reads in the history).
    sql: `
      CREATE TABLE audit_log (
        id           INTEGER PRIMARY KEY,
        at           TEXT NOT NULL,
        account_id   INTEGER,
        actor        TEXT NOT NULL,
        token_id     INTEGER,
        token_name   TEXT,
        role         TEXT,
        address      TEXT,
        action       TEXT NOT NULL,
        target_kind  TEXT,
        target_id    INTEGER,
        target_name  TEXT,
        message      TEXT NOT NULL
      );
      CREATE INDEX audit_log_at ON audit_log(at);
      CREATE INDEX audit_log_account ON audit_log(account_id, id);
      CREATE INDEX audit_log_action ON audit_log(action, id);
    `,
  },
  {
    version: 17,
    name: 'assignments: the tables of deployments and value policies named for what they hold',
    // Since version 12 one table holds every assignment (a value policy or one of the four deployment
    // kinds) and one table every device's task of them: named so now. The column deployment_id of a
    // task keeps its name (the admin API and the events carry it): it is the assignment's id.
    // The renames carry the foreign keys of task_history along; the indexes are renamed with them.
    sql: /* sql */ `
      ALTER TABLE deployments RENAME TO policy_assignments;
      ALTER TABLE deployment_tasks RENAME TO policy_tasks;
      DROP INDEX deployments_fleet;
      DROP INDEX deployments_agent;
      DROP INDEX deployment_tasks_agent;
      CREATE INDEX policy_assignments_fleet ON policy_assignments(fleet_id, state) WHERE fleet_id IS NOT NULL;
      CREATE INDEX policy_assignments_agent ON policy_assignments(agent_id, state) WHERE agent_id IS NOT NULL;
      CREATE INDEX policy_tasks_agent ON policy_tasks(agent_id);
    `,
  },
  {
    version: 18,
    name: 'admin invitations',
    // An admin invited by email: the account exists (no password yet) and holds one live set-up
    // link at a time (its SHA-256 here; a new invitation replaces the old). Its email goes through
    // the mail worker's queue like the devices' invitations, in a table of its own (mail_deliveries
    // is keyed by device invitation); the link's secret waits there until the message is out.
    sql: `
      CREATE TABLE admin_invites (
        id          INTEGER PRIMARY KEY,
        account_id  INTEGER NOT NULL REFERENCES admin_accounts(id) ON DELETE CASCADE,
        token_hash  TEXT NOT NULL UNIQUE,
        invited_by  INTEGER,
        created_at  TEXT NOT NULL,
        expires_at  TEXT NOT NULL,
        used_at     TEXT,
        replaced_at TEXT
      );
      CREATE INDEX admin_invites_account ON admin_invites(account_id, id);

      CREATE TABLE admin_invite_deliveries (
        invite_id    INTEGER PRIMARY KEY REFERENCES admin_invites(id) ON DELETE CASCADE,
        token        TEXT,
        state        TEXT NOT NULL CHECK (state IN ('queued', 'sending', 'sent', 'failed', 'outbox')),
        attempts     INTEGER NOT NULL DEFAULT 0,
        error        TEXT,
        response     TEXT,
        message_id   TEXT,
        outbox_file  TEXT,
        queued_at    TEXT NOT NULL,
        updated_at   TEXT NOT NULL,
        sent_at      TEXT,
        retry_at     TEXT
      );
      CREATE INDEX admin_invite_deliveries_queue ON admin_invite_deliveries(state, queued_at);
    `,
  },
  {
    version: 19,
    name: 'package installs verified by the device inventory',
    // A package deployment's task that reported done (or whose package was downloaded) is checked
    // against the device's next inventory: is the package there, at the version deployed? One row
    // per task, the latest check; inventory_at is when that inventory was received.
    sql: `
      CREATE TABLE task_verifications (
        task_id       INTEGER PRIMARY KEY REFERENCES policy_tasks(id) ON DELETE CASCADE,
        result        TEXT NOT NULL CHECK (result IN ('verified', 'not_found')),
        detail        TEXT NOT NULL,
        inventory_at  TEXT NOT NULL,
        checked_at    TEXT NOT NULL
      );
    `,
  },
  {
    version: 20,
    name: 'two-factor sign-in; console sessions listed by a public id',
    // TOTP: the secret (base32) is kept while enrolling (pending) and once confirmed (enabled);
    // totp_last_step refuses a code used already (replay). Recovery codes are kept as SHA-256
    // hashes, each used once. A console session gets a random public id: the API names sessions by
    // it (the id the cookie carries is never stored, only its hash).
    sql: /* sql */ `
      ALTER TABLE admin_accounts ADD COLUMN totp_secret TEXT;
      ALTER TABLE admin_accounts ADD COLUMN totp_pending_secret TEXT;
      ALTER TABLE admin_accounts ADD COLUMN totp_enabled_at TEXT;
      ALTER TABLE admin_accounts ADD COLUMN totp_last_step INTEGER;

      CREATE TABLE admin_recovery_codes (
        id          INTEGER PRIMARY KEY,
        account_id  INTEGER NOT NULL REFERENCES admin_accounts(id) ON DELETE CASCADE,
        code_hash   TEXT NOT NULL,
        created_at  TEXT NOT NULL,
        used_at     TEXT
      );
      CREATE INDEX admin_recovery_codes_account ON admin_recovery_codes(account_id, code_hash);

      ALTER TABLE admin_sessions ADD COLUMN public_id TEXT;
      UPDATE admin_sessions SET public_id = lower(hex(randomblob(8)));
      CREATE UNIQUE INDEX admin_sessions_public_id ON admin_sessions(public_id);
      CREATE INDEX admin_sessions_account ON admin_sessions(account_id);
    `,
  },
  {
    version: 21,
    name: 'fleet scopes of admin accounts and API tokens',
    // An operator or observer may be scoped to fleets: no row, every fleet; rows, those fleets only.
    // A token's rows narrow its account's (never widen them). A scoped fleet cannot be deleted
    // (no ON DELETE on fleet_id: the fleet service says who it scopes, 409).
    sql: `
      CREATE TABLE account_fleets (
        account_id  INTEGER NOT NULL REFERENCES admin_accounts(id) ON DELETE CASCADE,
        fleet_id    INTEGER NOT NULL REFERENCES fleets(id),
        PRIMARY KEY (account_id, fleet_id)
      ) WITHOUT ROWID;
      CREATE INDEX account_fleets_fleet ON account_fleets(fleet_id);

      CREATE TABLE token_fleets (
        token_id  INTEGER NOT NULL REFERENCES api_tokens(id) ON DELETE CASCADE,
        fleet_id  INTEGER NOT NULL REFERENCES fleets(id),
        PRIMARY KEY (token_id, fleet_id)
      ) WITHOUT ROWID;
      CREATE INDEX token_fleets_fleet ON token_fleets(fleet_id);
    `,
  },
  {
    version: 22,
    name: 'audit changes and event actors',
    // The audit entry's changed fields ({"field": {"before": …, "after": …}}, secrets redacted), and
    // who caused an event ("Ana Ruiz", "token ci-bot (admin)"; null: a device or the server itself).
    sql: `
      ALTER TABLE audit_log ADD COLUMN changes TEXT;
      ALTER TABLE events ADD COLUMN actor TEXT;
      CREATE INDEX audit_log_target ON audit_log(target_kind, target_id, id);
    `,
  },
  {
    version: 23,
    name: 'device views: version keys, installed apps, saved views and their assignments',
    // The --where language (src-shared/contract/where.ts) compares versions as versions: each OS and
    // app version is kept beside a sortable key (contract versionKey: zero-padded numbers), written
    // when an inventory arrives (rows older than this are keyed once at start). The installed apps
    // of the last inventory are rows, so `app=… app_version<…` is an indexed EXISTS. A saved view is
    // a name and an expression; a policy assigned to a view (view_assignments) is carried by one
    // device-level assignment per member (policy_assignments.view_assignment_id), opened when a
    // device enters the view and retired when it leaves.
    sql: /* sql */ `
      ALTER TABLE agents ADD COLUMN os_version_key TEXT;
      CREATE INDEX agents_os_version_key ON agents(os_version_key);

      CREATE TABLE agent_apps (
        agent_id     INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
        package      TEXT NOT NULL,
        name         TEXT NOT NULL,
        version      TEXT,
        version_key  TEXT,
        PRIMARY KEY (agent_id, package)
      );
      CREATE INDEX agent_apps_package ON agent_apps(package, version_key);

      CREATE TABLE device_views (
        id          INTEGER PRIMARY KEY,
        entity_id   INTEGER NOT NULL DEFAULT 1 REFERENCES entities(id),
        name        TEXT NOT NULL,
        name_key    TEXT NOT NULL,
        where_expr  TEXT NOT NULL,
        created_by  TEXT,
        created_at  TEXT NOT NULL,
        updated_at  TEXT NOT NULL,
        UNIQUE (entity_id, name_key)
      );

      CREATE TABLE view_assignments (
        id                INTEGER PRIMARY KEY,
        entity_id         INTEGER NOT NULL REFERENCES entities(id),
        view_id           INTEGER NOT NULL REFERENCES device_views(id),
        policy            TEXT NOT NULL,
        value             TEXT,
        item_kind         TEXT CHECK (item_kind IN ('file', 'package')),
        item_id           INTEGER,
        item_name         TEXT NOT NULL,
        destination       TEXT,
        remove_on_delete  INTEGER NOT NULL DEFAULT 0 CHECK (remove_on_delete IN (0, 1)),
        state             TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'removed')),
        created_at        TEXT NOT NULL,
        removed_at        TEXT
      );
      CREATE INDEX view_assignments_view ON view_assignments(view_id, state);

      ALTER TABLE policy_assignments ADD COLUMN view_assignment_id INTEGER;
      CREATE INDEX policy_assignments_view ON policy_assignments(view_assignment_id, state) WHERE view_assignment_id IS NOT NULL;
    `,
  },
  {
    version: 24,
    name: 'bulk jobs and their per-device results',
    // One admin request acting on many devices (issue 25): the job (action, the selection in words
    // and as given, what the action was given, who asked) and one result row per device. A result
    // keeps the device's name and fleet: it outlives a device the job deleted (no foreign key).
    // fleet_ids: the fleets of its devices, so a scoped admin sees their fleets' jobs only.
    sql: `
      CREATE TABLE jobs (
        id           INTEGER PRIMARY KEY,
        action       TEXT NOT NULL,
        state        TEXT NOT NULL CHECK (state IN ('running', 'done', 'failed', 'interrupted')),
        selection    TEXT NOT NULL,
        description  TEXT NOT NULL,
        params       TEXT,
        total        INTEGER NOT NULL,
        fleet_ids    TEXT NOT NULL,
        account_id   INTEGER REFERENCES admin_accounts(id) ON DELETE SET NULL,
        actor        TEXT,
        error        TEXT,
        created_at   TEXT NOT NULL,
        finished_at  TEXT
      );
      CREATE INDEX jobs_state ON jobs(state);

      CREATE TABLE job_results (
        job_id       INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
        agent_id     INTEGER NOT NULL,
        name         TEXT NOT NULL,
        fleet_id     INTEGER,
        status       TEXT NOT NULL CHECK (status IN ('sent', 'answered', 'offline', 'done', 'refused', 'failed')),
        reason       TEXT,
        at           TEXT NOT NULL,
        answered_at  TEXT,
        PRIMARY KEY (job_id, agent_id)
      );
      CREATE INDEX job_results_status ON job_results(job_id, status);
    `,
  },
  {
    version: 25,
    name: 'daily figures for the reports',
    // What the Reports page charts, kept as the server runs (backend/reports/): one value per UTC
    // day, fleet, metric and key. Counted metrics grow as things happen (enrolled; deploy done /
    // failed); sampled ones are overwritten by each sample of the day (online: key = the hour, the
    // count at that hour's last sample; devices, compliance by state, os and model: the day's last
    // sample). fleet_id is not a foreign key: a deleted fleet's history stays in the totals.
    // report_cursor: the last event the figures counted, and when the one-time backfill from the
    // existing rows ran (a restart counts the events recorded while no server listened, once).
    sql: `
      CREATE TABLE daily_figures (
        day       TEXT NOT NULL,
        fleet_id  INTEGER NOT NULL,
        metric    TEXT NOT NULL,
        key       TEXT NOT NULL DEFAULT '',
        value     INTEGER NOT NULL,
        PRIMARY KEY (day, fleet_id, metric, key)
      );
      CREATE INDEX daily_figures_metric ON daily_figures(metric, day);

      CREATE TABLE report_cursor (
        id             INTEGER PRIMARY KEY CHECK (id = 1),
        event_id       INTEGER NOT NULL,
        backfilled_at  TEXT NOT NULL,
        sampled_at     TEXT
      );
    `,
  },
  {
    version: 26,
    name: 'alerts: rules, incidents, webhooks and their deliveries, notification emails',
    // A rule watches one condition (kind + threshold, optionally one fleet) and notifies its emails
    // and webhooks. An incident is one subject (a device, a task, an invitation, the broker, SMTP)
    // for which a rule's condition holds: one open incident per rule and subject (the partial unique
    // index), resolved once when the condition clears. Webhook deliveries are the webhook worker's
    // queue (state, attempts, next attempt, last answer); notification_mails is the mail worker's
    // third queue (emails composed by the caller: alerts). Times are ISO strings computed in
    // TypeScript; booleans 0/1.
    sql: `
      CREATE TABLE webhooks (
        id          INTEGER PRIMARY KEY,
        name        TEXT NOT NULL,
        url         TEXT NOT NULL,
        secret      TEXT NOT NULL,
        enabled     INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
        created_at  TEXT NOT NULL,
        updated_at  TEXT NOT NULL
      );

      CREATE TABLE alert_rules (
        id          INTEGER PRIMARY KEY,
        name        TEXT NOT NULL,
        kind        TEXT NOT NULL,
        enabled     INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
        threshold   INTEGER,
        fleet_id    INTEGER REFERENCES fleets(id) ON DELETE CASCADE,
        emails      TEXT NOT NULL DEFAULT '[]',
        created_at  TEXT NOT NULL,
        updated_at  TEXT NOT NULL
      );

      CREATE TABLE alert_rule_webhooks (
        rule_id     INTEGER NOT NULL REFERENCES alert_rules(id) ON DELETE CASCADE,
        webhook_id  INTEGER NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
        PRIMARY KEY (rule_id, webhook_id)
      );
      CREATE INDEX alert_rule_webhooks_webhook ON alert_rule_webhooks(webhook_id);

      CREATE TABLE alert_incidents (
        id            INTEGER PRIMARY KEY,
        rule_id       INTEGER NOT NULL REFERENCES alert_rules(id) ON DELETE CASCADE,
        subject_key   TEXT NOT NULL,
        subject       TEXT NOT NULL,
        agent_id      INTEGER,
        detail        TEXT NOT NULL,
        state         TEXT NOT NULL CHECK (state IN ('open', 'resolved')),
        opened_at     TEXT NOT NULL,
        last_seen_at  TEXT NOT NULL,
        resolved_at   TEXT
      );
      CREATE UNIQUE INDEX alert_incidents_one_open ON alert_incidents(rule_id, subject_key) WHERE state = 'open';
      CREATE INDEX alert_incidents_state ON alert_incidents(state, id);

      CREATE TABLE webhook_deliveries (
        id               INTEGER PRIMARY KEY,
        webhook_id       INTEGER NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
        event            TEXT NOT NULL,
        payload          TEXT NOT NULL,
        state            TEXT NOT NULL CHECK (state IN ('queued', 'sending', 'delivered', 'failed')),
        attempts         INTEGER NOT NULL DEFAULT 0,
        next_attempt_at  TEXT,
        response_code    INTEGER,
        response_ms      INTEGER,
        error            TEXT,
        created_at       TEXT NOT NULL,
        updated_at       TEXT NOT NULL,
        delivered_at     TEXT
      );
      CREATE INDEX webhook_deliveries_due ON webhook_deliveries(state, next_attempt_at);
      CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries(webhook_id, id);

      CREATE TABLE notification_mails (
        id           INTEGER PRIMARY KEY,
        recipients   TEXT NOT NULL,
        subject      TEXT NOT NULL,
        body         TEXT NOT NULL,
        state        TEXT NOT NULL CHECK (state IN ('queued', 'sending', 'sent', 'failed', 'outbox')),
        attempts     INTEGER NOT NULL DEFAULT 0,
        error        TEXT,
        response     TEXT,
        message_id   TEXT,
        outbox_file  TEXT,
        queued_at    TEXT NOT NULL,
        updated_at   TEXT NOT NULL,
        sent_at      TEXT,
        retry_at     TEXT
      );
      CREATE INDEX notification_mails_queue ON notification_mails(state, queued_at);
    `,
  },
  {
    version: 27,
    name: 'cluster: the node registry and the secrets every node shares',
    // One row per node name (serve --node-name): where it answers, what it runs, when it started,
    // its last heartbeat (every few seconds while it runs) and when it stopped cleanly. A node is
    // live while its heartbeat is recent (cluster/nodes.ts). cluster_secrets holds what every node
    // of one database must agree on (the admin token). Times are ISO strings computed in TypeScript.
    sql: `
      CREATE TABLE nodes (
        id              INTEGER PRIMARY KEY,
        name            TEXT NOT NULL,
        admin_url       TEXT NOT NULL,
        agent_url       TEXT NOT NULL,
        version         TEXT NOT NULL,
        broker_mode     TEXT NOT NULL,
        started_at      TEXT NOT NULL,
        last_heartbeat  TEXT NOT NULL,
        stopped_at      TEXT
      );
      CREATE UNIQUE INDEX nodes_name ON nodes(name);

      CREATE TABLE cluster_secrets (
        name        TEXT PRIMARY KEY,
        value       TEXT NOT NULL,
        updated_at  TEXT NOT NULL
      );
    `,
  },
  {
    version: 28,
    name: 'several nodes: duty leases, the node running each bulk job',
    // A duty is work that must run on one node at a time (a sweeper, the alert evaluation, the
    // reports sampler, republishing policies): the node holding its lease does it (cluster/duties.ts).
    // A lease is taken or renewed by one upsert that succeeds only when the lease has expired or is
    // the caller's own (holder and fence), with times computed in TypeScript as ISO strings; the
    // fence grows by one each time the lease changes hands, so a node that lost it cannot renew it.
    // Each node also holds a lease `node:<name>` while it runs: its liveness. jobs.node names the node
    // running a bulk job, so that only that node's death (its lease expired) interrupts it.
    sql: `
      CREATE TABLE duty_leases (
        duty         TEXT PRIMARY KEY,
        holder       TEXT NOT NULL,
        fence        INTEGER NOT NULL,
        acquired_at  TEXT NOT NULL,
        renewed_at   TEXT NOT NULL,
        expires_at   TEXT NOT NULL
      );
      ALTER TABLE jobs ADD COLUMN node TEXT;
    `,
  },
  {
    version: 29,
    name: 'shared sign-in and rate-limit state: buckets, failures, tickets, challenges',
    // What one process used to hold in memory, in the database so that every node of a cluster
    // sees the same (issue 23): a limit of 10 a minute is 10 in all, a ticket is used once anywhere.
    // rate_limits: one row per limited key (scope:key), the bucket as its "theoretical arrival
    // time" in ms since the epoch (GCRA: a bucket is full again once tat_ms <= now), updated by one
    // statement per hit; allowed says whether that hit passed. sign_in_failures: failed sign-ins per
    // address or account and until when it waits. sign_in_tickets / sign_in_challenges: one-time
    // sign-in links and passwords waiting for their second step, kept by the SHA-256 of what the
    // browser holds. Expired rows are swept hourly and when new ones are made.
    sql: `
      CREATE TABLE rate_limits (
        key      TEXT PRIMARY KEY,
        tat_ms   INTEGER NOT NULL,
        allowed  INTEGER NOT NULL CHECK (allowed IN (0, 1))
      );

      CREATE TABLE sign_in_failures (
        key       TEXT PRIMARY KEY,
        failures  INTEGER NOT NULL,
        last_at   TEXT NOT NULL,
        until_at  TEXT NOT NULL
      );

      CREATE TABLE sign_in_tickets (
        ticket_hash  TEXT PRIMARY KEY,
        account_id   INTEGER REFERENCES admin_accounts(id) ON DELETE CASCADE,
        expires_at   TEXT NOT NULL
      );

      CREATE TABLE sign_in_challenges (
        challenge_hash  TEXT PRIMARY KEY,
        account_id      INTEGER NOT NULL REFERENCES admin_accounts(id) ON DELETE CASCADE,
        step            TEXT NOT NULL CHECK (step IN ('code', 'enrol')),
        expires_at      TEXT NOT NULL,
        attempts        INTEGER NOT NULL DEFAULT 0
      );
    `,
  },
  {
    version: 30,
    name: 'queues claimed by a node: claimed_by and claimed_until on the mail and webhook queues',
    // Several nodes drain one queue: a node claims a due row (state 'sending') under its name until
    // claimed_until, keeps the claim alive while its send is in progress, and only the claim's holder
    // writes the outcome. A claim whose node died expires and another node takes the row. A row left
    // 'sending' by an older version (no claim) counts as expired. Who sent a row stays in claimed_by.
    sql: `
      ALTER TABLE mail_deliveries ADD COLUMN claimed_by TEXT;
      ALTER TABLE mail_deliveries ADD COLUMN claimed_until TEXT;
      ALTER TABLE admin_invite_deliveries ADD COLUMN claimed_by TEXT;
      ALTER TABLE admin_invite_deliveries ADD COLUMN claimed_until TEXT;
      ALTER TABLE notification_mails ADD COLUMN claimed_by TEXT;
      ALTER TABLE notification_mails ADD COLUMN claimed_until TEXT;
      ALTER TABLE webhook_deliveries ADD COLUMN claimed_by TEXT;
      ALTER TABLE webhook_deliveries ADD COLUMN claimed_until TEXT;
    `,
  },
  {
    version: 33,
    name: 'sessions numbered in opening order; agents know the session of their current enrollment',
    // A late duplicate of POST PluginMdmAgent (a device gave up on it and enrolled again through a new
    // session) must not undo the enrollment it duplicates. Sessions are numbered in the order they
    // open (seq: never reused, even once sessions are deleted) and an agent keeps the number of the
    // session that made its current enrollment: a POST through a session numbered at or below it is
    // a replay (agents/enrollment.ts).
    sql: `
      ALTER TABLE sessions ADD COLUMN seq INTEGER;
      UPDATE sessions SET seq = rowid;
      CREATE INDEX sessions_seq ON sessions(seq);
      ALTER TABLE agents ADD COLUMN enrolled_session_seq INTEGER;
      CREATE INDEX agents_enrolled_session_seq ON agents(enrolled_session_seq);
    `,
  },
];
