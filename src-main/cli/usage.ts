// What `mdm-console --help` and `mdm-console COMMAND --help` print.

const COMMON = `  --data-dir DIR    the server's data dir (default: $MDM_CONSOLE_DATA_DIR or the per-user data folder)
  --json            print JSON`;

const INVITE = `usage: mdm-console invite --email E [--firstname F] [--lastname L] [--fleet NAME] [--days D]
                          [--no-email] [--another] [--resend]
       mdm-console invite --csv FILE [--days D] [--no-email] [--another] [--skip-invalid]

Creates an invitation and prints its deeplink, invitation token and user token. The invitation
is emailed unless --no-email (or the mail settings say otherwise).

  --days D      how long the invitation stays valid: 1 to 180 days (default: the settings, 7)
  --fleet NAME  the fleet the device joins (default: the default fleet)
  --csv FILE    one invitation per row; header: email[,firstname,lastname,fleet]. Every row is
                checked first: a bad row creates nothing, and each is named by its line of the
                file. Files of more than 5,000 rows are sent in batches.
  --skip-invalid  with --csv: create the valid rows and list the others (the console's other choice)
  An address that already has a pending invitation is refused (exit code 3), naming it:
  --resend      email that pending invitation again instead (same link, same expiry)
  --another     create a second invitation anyway (e.g. for a second device)
${COMMON}`;

export const USAGES: Record<string, string> = {
  serve: `usage: mdm-console serve [--data-dir DIR] [--database-url postgres://USER:PASSWORD@HOST:PORT/DB]
                         [--port P] [--admin-port A] [--mqtt-port M] [--mqtt-tls-port T]
                         [--admin-host ADDR] [--admin-origin https://NAME]
                         [--public-host HOST] [--public-port P] [--trust-proxy ADDRESSES] [--host ADDR] [--mqtt-tls-cert FILE --mqtt-tls-key FILE]
                         [--smtp-url smtp(s)://USER:PASS@HOST:PORT] [--mail-from "Name <addr>"]
                         [--agent-app spec|flyve] [--mqtt-broker embedded|mosquitto|rabbitmq]
                         [--mqtt-broker-url URL] [--mqtt-broker-password-file FILE]
                         [--mqtt-public-url URL] [--mqtt-broker-ca FILE]
                         [--mqtt-auth-host H --mqtt-auth-port P] [--mqtt-auth-secret-file FILE]
                         [--node-name NAME] [--files-dir DIR] [--secret-key-file FILE] [--json]

Runs the backend and the web console until Ctrl+C. One server per data dir; on PostgreSQL,
several servers (nodes, each with its own data dir) may share one database behind a load balancer.

  --port P            agent API and deeplink page (default 8080; 0 = any free port)
  --host ADDR         address the agent API listens on (default 0.0.0.0: the LAN)
  --admin-port A      admin API and console (default 8081)
  --admin-host ADDR   address the admin API and console listen on (default 127.0.0.1; or
                      $MDM_CONSOLE_ADMIN_HOST); another one makes them reachable from the network
  --admin-origin URL  the console's address behind a load balancer (or $MDM_CONSOLE_ADMIN_ORIGIN):
                      the admin side also answers to that name
  --mqtt-port M, --mqtt-tls-port T   MQTT broker, plain and TLS (default 1883, 8883)
  --public-host HOST  the address put into deeplinks and QR codes (default: first LAN IPv4)
  --public-port P     the port put into deeplinks, QR codes and agent records, when devices reach
                      this server through a balancer on another port (default: --port's)
  --trust-proxy ADDRESSES   load balancers whose X-Forwarded-For names the client (addresses
                      or CIDRs, comma-separated: 127.0.0.1,10.0.0.0/8; or $MDM_CONSOLE_TRUST_PROXY):
                      per-address limits and the audit log then see each device and admin
  --mqtt-tls-cert FILE --mqtt-tls-key FILE   the broker's own TLS certificate (default: generated)
  --smtp-url URL, --mail-from ADDR   where invitation emails go (or $MDM_CONSOLE_SMTP_URL,
                      $MDM_CONSOLE_MAIL_FROM; none: .eml files in DIR/outbox)
  --agent-app spec|flyve   which agent app new codes are made for (kept as the agent_app setting)
  --mqtt-broker MODE  where agents' MQTT connections live (default embedded); mosquitto or rabbitmq
                      need --mqtt-broker-url mqtt[s]://USER@HOST:PORT[,HOST:PORT…]
  --mqtt-broker-password-file FILE   the password of the broker URL's account, on the file's
                      first line (or $MDM_CONSOLE_MQTT_BROKER_PASSWORD); never put it on a command
                      line. rabbitmq: optional (without one the backend draws its own)
  --mqtt-public-url URL    the broker address put into agent records (default: the broker URL's)
  --mqtt-broker-ca FILE    CA certificate for an mqtts:// broker URL
  --mqtt-auth-host H, --mqtt-auth-port P   rabbitmq: listener of the HTTP auth endpoints
  --mqtt-auth-secret-file FILE   rabbitmq: the secret the nodes present to them (or
                      $MDM_CONSOLE_MQTT_AUTH_SECRET; default: DIR/rabbitmq-auth-secret, drawn once)
  --data-dir DIR      database, files, token (default: $MDM_CONSOLE_DATA_DIR or the per-user data folder)
  --database-url URL  the database on PostgreSQL (13 or newer) instead of DIR's SQLite file (or
                      $MDM_CONSOLE_DATABASE_URL, which keeps the password off the command line)
  --node-name NAME    this node's name among the nodes of the database, unique among the running
                      ones (or $MDM_CONSOLE_NODE_NAME; default: the host name)
  --files-dir DIR     where stored files and packages live: with several nodes, a directory every
                      node mounts, such as NFS (default: DIR/files of --data-dir)
  --secret-key-file FILE   PostgreSQL: the cluster key that encrypts the secrets kept in the
                      database (the SMTP password), the same on every node: 32 random bytes in
                      base64 (openssl rand -base64 32), or $MDM_CONSOLE_SECRET_KEY; default
                      DIR/secret-key, written by the first node (copy it to the others)
  --json              print the server's addresses as JSON`,
  invite: INVITE,
  invitations: `usage: mdm-console invitations [--status pending|enrolled|expired|revoked] [--search TEXT]

Lists invitations, newest first.
${COMMON}`,
  revoke: `usage: mdm-console revoke ID

Revokes a pending invitation: its QR code and link stop working.
${COMMON}`,
  resend: `usage: mdm-console resend ID

Emails the invitation again, with the same link and expiry.
${COMMON}`,
  code: `usage: mdm-console code create --name NAME [--fleet F] [--domain D]... [--max-uses K] [--days D] [--approval manual]
       mdm-console code revoke ID | code rotate ID | codes

An enrollment code: one QR code for many devices (optionally limited to email domains, a number
of uses, a lifetime, or needing approval). rotate draws new tokens: printed copies stop working.
${COMMON}`,
  codes: `usage: mdm-console codes

Lists enrollment codes.
${COMMON}`,
  approve: `usage: mdm-console approve AGENT_ID

Approves a device that enrolled with a code needing approval.
${COMMON}`,
  reject: `usage: mdm-console reject AGENT_ID

Rejects a device that enrolled with a code needing approval.
${COMMON}`,
  mail: `usage: mdm-console mail status | mail test --to ADDRESS | mail retry

  status   the mail transport and how many emails are queued, sent, failed
  test     sends a test email
  retry    queues the failed invitation emails again
${COMMON}`,
  agents: `usage: mdm-console agents [--where EXPR] [--view NAME|ID] [--fleet NAME|ID]

The same as devices.
${COMMON}`,
  devices: `usage: mdm-console devices [--where EXPR] [--view NAME|ID] [--fleet NAME|ID]

Lists devices: id, name, type and agent version, state, online, fleet, OS, model, email, last contact.
  --where EXPR      only those the expression selects (docs/where.md), e.g.
                    --where 'os<10 last_contact>7d fleet=Warehouse'
                    --where 'app=com.example.scanner app_version<2.3 model~"Galaxy"'
  --view NAME|ID    only a saved view's devices (mdm-console views)
  --fleet NAME|ID   only one fleet's
All given must hold. A mistake in EXPR is refused with its column and what was expected there.
${COMMON}`,
  jobs: `usage: mdm-console jobs [--limit N]

Lists the bulk jobs, newest first: action, devices, state and how many were sent, answered,
offline, done, refused or failed.
${COMMON}`,
  job: `usage: mdm-console job ID [--status sent|answered|offline|done|refused|failed]

One bulk job and each device's result (with the reason of those refused or failed).
${COMMON}`,
  views: `usage: mdm-console views

Lists the saved device views with how many devices each holds now.
${COMMON}`,
  view: `usage: mdm-console view add NAME --where EXPR
       mdm-console view edit NAME|ID [--where EXPR] [--name NEW_NAME]
       mdm-console view rm NAME|ID

A saved view (dynamic group) is a name and an expression of the filter language (docs/where.md):
it stays current as devices change. Use it with devices --view NAME, or as the target of a policy
or a deployment: policy set SYMBOL VALUE --view NAME (docs/where.md, views as targets).
${COMMON}`,
  fleets: `usage: mdm-console fleets

Lists fleets with their device counts.
${COMMON}`,
  fleet: `usage: mdm-console fleet add NAME | fleet rename ID|NAME NEW_NAME | fleet delete ID|NAME

A fleet with devices cannot be deleted; its deployments go with an empty one.
${COMMON}`,
  deploy: `usage: mdm-console deploy file:ID|package:ID (--fleet NAME | --agent ID) [--destination PATH] [--keep-on-remove]

Publishes a file or package (retained policy) to a fleet or one device; prints the deployment with
its per-device tasks. --destination: the folder on the device (files). Undeploying removes what it
installed unless --keep-on-remove. The same as policy set deployApp|deployFile ID (one mechanism).
${COMMON}`,
  deployments: `usage: mdm-console deployments [--fleet NAME] [--agent ID] [--all]

Deployments and their progress ("37 of 40 done, 2 failed, 1 pending"); --all includes removed ones.
${COMMON}`,
  deployment: `usage: mdm-console deployment [status] ID

One deployment (or policy assignment) with each device's task: its status, reason and history, and
for packages whether the device's own inventory shows the install: "verified", "not found in
inventory" (with that inventory's time), or "awaiting inventory" until the device sends one after
reporting done (ask for one: command AGENT_ID inventory).
${COMMON}`,
  undeploy: `usage: mdm-console undeploy ID

Removes a deployment: its retained policy is cleared, open tasks canceled (and, unless it was made
with --keep-on-remove, a removeApp/removeFile follows).
${COMMON}`,
  policies: `usage: mdm-console policies [--category TEXT]

The policy catalogue: each policy's symbol, label, explanation, what it takes (true/false, a bounded
number with its unit, one of its choices), default and recommended value, minimum Android version,
and whether it needs a system agent.
${COMMON}`,
  policy: `usage: mdm-console policy set SYMBOL VALUE (--fleet NAME|ID | --agent ID | --view NAME) [--destination PATH] [--keep-on-remove]
       mdm-console policy unset SYMBOL (--fleet NAME|ID | --agent ID | --view NAME) | policy unset ID
       mdm-console policy status (--fleet NAME|ID | --agent ID | --view NAME)

set: publishes the value (retained) to the fleet's or the device's topic, one task per device.
VALUE: true/false (yes/no, on/off) for switches, a whole number (maximumTimeToLock in milliseconds,
periodicGeolocation in seconds), or a choice by key or label (passwordEnabled pin). A policy is set
once per fleet and once per device: unset it to change it. A device's own value beats its fleet's.
The deployment kinds are set the same way: deployApp ID (a package, package:ID too) and deployFile
ID (a file; --destination FOLDER) are what deploy does, and are removed from the devices when unset
unless --keep-on-remove; removeApp NAME (an Android package name) and removeFile PATH remove what
they name, refused while a deployment of it is in force there.
unset: clears the retained message and cancels open tasks. status: a fleet's policies with their
progress, or a device's tasks with where each value comes from and whether it applies.
${COMMON}`,
  compliance: `usage: mdm-console compliance [--fleet NAME|ID] [--view NAME|ID] [--where EXPR] [--state compliant|pending|failing|none]

Each enrolled device: compliant (all done), pending, failing (failed or incompatible) or none, with
its counts; --state keeps the devices in that state (the console's compliance filter); --view and
--where keep those a saved view or an expression selects (docs/where.md).
${COMMON}`,
  report: `usage: mdm-console report enrollments|online|compliance|os|models|deployments [--days N] [--fleet NAME|ID] [--csv]

The daily figures the server keeps as it runs (the console's Reports page), over the last N days
(default 30, at most 366; UTC days, today included), for every fleet you see or one:
  enrollments   devices enrolled per day
  online        per day: the most devices online at once (hourly samples), at the last sample, devices
  compliance    devices compliant, pending, failing or with no policy, at each day's last sample
  os, models    devices by OS version or by model: each day's last sample, and now
  deployments   deployment tasks devices reported done or failed, per day
Sampled figures read – on a day the server took no sample (it samples every 5 minutes).
--csv prints the data as CSV (day, then one column per line of the chart); --json the whole report.
${COMMON}`,
  file: `usage: mdm-console file add PATH [--name NAME] [--as-file] | file rm ID | files

Uploads a file devices may download, or deletes one. An APK is refused here (add it with
package add, so that devices install it) unless --as-file stores it as a plain file.
${COMMON}`,
  files: `usage: mdm-console files
${COMMON}`,
  package: `usage: mdm-console package add PATH [--name NAME] [--package-name N --version-code C --version-name V]
                               [--if-unreadable refuse|keep] | package rm ID | packages

Uploads an application package devices may download, or deletes one. An APK's package name and
versions are read from its manifest; give them for any other package. An APK whose manifest cannot
be read is refused (nothing is stored), unless --if-unreadable keep with --package-name and
--version-code keeps it as the package they describe.
${COMMON}`,
  packages: `usage: mdm-console packages
${COMMON}`,
  status: `usage: mdm-console status

Where the running server is (URLs, ports, counts, the nodes of its database, warnings), with a fresh
sign-in link for the console.
${COMMON}`,
  admins: `usage: mdm-console admins

The admins: email, name, role, status (invited, active, disabled) and last sign-in; for an invited
one, until when their set-up link works and what became of its email.
${COMMON}`,
  admin: `usage: mdm-console admin add EMAIL --role owner|admin|operator|observer [--fleet NAME|ID]... [--name N] [--days D] [--no-email]
       mdm-console admin set EMAIL --role owner|admin|operator|observer [--fleet NAME|ID]... [--all-fleets]
       mdm-console admin invite-again EMAIL [--days D] [--no-email]
       mdm-console admin disable|enable|delete|reset-two-factor EMAIL

Managing admins (the owner's). add invites an admin by email: the mail worker sends them a set-up
link (one use, for --days D, 7 by default, at most 30) to the page where they choose their
password; with --no-email nothing is sent and the link is printed, to hand over another way.
--fleet (repeatable; an operator or observer only) scopes them to those fleets: they see and act on
those fleets' devices, invitations and codes only. invite-again makes a new link (the previous one
stops working). set changes the role, and with --fleet the fleets (they replace the scope;
--all-fleets removes it); an owner or admin always sees every fleet, so promoting one drops its scope. disable ends
their console sessions and refuses their API tokens until enable. delete removes them and their
API tokens. reset-two-factor is for a lost phone: their authenticator secret and recovery codes
are deleted. You cannot change your own role, disable or delete yourself, nor the owner holding the
data dir's admin token (the CLI's). EMAIL may also be #ID.
${COMMON}`,
  console: `usage: mdm-console console [--as EMAIL]

Prints a new one-time link (valid 15 minutes) that opens the console signed in: as the owner (the
data dir's admin token is the owner's), or with --as as the admin with that email. The link skips
the password and the two-factor code: it comes from whoever holds the admin token.
  --as EMAIL   sign in as this admin (an unknown email is an error)
${COMMON}`,
  alerts: `usage: mdm-console alerts [--state open|resolved|all] [--limit N]

The alert rules (condition, fleet, who they notify, open incidents), then their incidents, newest
first: open ones by default (docs/alerts.md).
${COMMON}`,
  alert: `usage: mdm-console alert add KIND [--days N | --hours N] [--fleet NAME|ID] [--email ADDR]... [--webhook ID]...
                              [--name N] [--disabled]
       mdm-console alert rm|enable|disable ID

KIND: device_silent (--days, default 7), task_failed, approval_waiting (--hours, default 24),
compliance_lost, invitation_expiring (--hours, default 24), broker_unreachable, smtp_unreachable.
An incident opens once per rule and subject (a device, a task, an invitation …) and resolves once
when the condition clears; each is emailed (--email, repeatable) and posted to the webhooks
(--webhook ID, repeatable) once, not repeated while it lasts. Disabling a rule closes its
incidents without a notice.
${COMMON}`,
  webhooks: `usage: mdm-console webhooks

The webhooks: URL, the secret's last four characters, the rules notifying each, the last delivery.
${COMMON}`,
  webhook: `usage: mdm-console webhook add URL [--secret S | --secret-file FILE] [--name N] [--disabled]
       mdm-console webhook rm|enable|disable ID
       mdm-console webhook test ID [--no-wait]
       mdm-console webhook log ID [--limit N]

add: an http:// or https:// URL. Each delivery is a JSON POST signed with HMAC-SHA256 of
"<timestamp>.<body>" keyed with the secret (X-MDM-Signature: sha256=<hex>, X-MDM-Timestamp);
docs/alerts.md shows how a receiver checks it. Without a secret the server draws one and it is
printed this once; --secret-file reads it from a file's first line (kept out of the process list).
test: queues a signed test event and waits (up to 20 s) for the first answer; exit code 1 unless
it was delivered. log: the deliveries, newest first: state, attempts, HTTP status, response time,
error, next retry.
${COMMON}`,
  export: `usage: mdm-console export devices [--where EXPR] [--view NAME] [--fleet NAME|ID] [--status S] [--type android|apple] [--online|--offline]
                                [--compliance compliant|pending|failing|none] [--search WORDS]
       mdm-console export invitations [--status pending|enrolled|expired|revoked] [--search TEXT] [--fleet NAME|ID]
       mdm-console export codes [--fleet NAME|ID]
       mdm-console export code-uses [--code ID] [--outcome used|refused]
       mdm-console export results [--assignment ID] [--fleet NAME|ID] [--agent ID] [--policy SYMBOL]
                                  [--kind deployment|value] [--state active|removed] [--status S]
       mdm-console export jobs
       mdm-console export job-results [--job ID] [--status sent|answered|offline|done|refused|failed]
       mdm-console export audit [--actor A] [--action A] [--target NAME] [--since ISO] [--until ISO]
  each with [--format csv|jsonl] [--out FILE]

Every row the filters match (the console's lists' filters), as CSV (the default: a header line,
cells starting with = + - @ prefixed with ' for spreadsheets) or JSON lines (one object a line),
streamed to stdout or, with --out, to FILE (written whole or not at all). --where takes the
language of \`devices --where\` (docs/where.md), --view a saved view. Devices come with their
inventory's fields (model, OS, serial, IMEI, battery, storage, apps) and compliance; tokens and
enrollment links are never exported. An operator or observer scoped to fleets exports theirs only.
  --data-dir DIR    the server's data dir (default: $MDM_CONSOLE_DATA_DIR or the per-user data folder)`,
  backup: `usage: mdm-console backup DIR [--data-dir DATA_DIR] [--database-url postgres://…] [--files-dir FILES_DIR]

Copies the database (a consistent snapshot, also while the server runs), the stored files and
packages, the broker's TLS certificate and the mail secrets into DIR, a new or empty folder.
  --database-url URL   PostgreSQL mode (or $MDM_CONSOLE_DATABASE_URL): the database is that one,
                       read in one snapshot while servers keep running, into the backup's SQLite
                       file (each table checked).
  --files-dir DIR      where the stored files are (serve --files-dir, a directory the nodes share);
                       default: the running server's (its server.json), else DATA_DIR/files.`,
  restore: `usage: mdm-console restore DIR [--data-dir DATA_DIR] [--database-url postgres://…] [--files-dir FILES_DIR]

Replaces the data of DATA_DIR with the backup in DIR. The server must be stopped. What it
replaces is kept in DATA_DIR/before-restore-<time>/.
  --database-url URL   PostgreSQL mode (or $MDM_CONSOLE_DATABASE_URL): the backup's database goes
                       into that database, which must be empty (one transaction, each table
                       checked); its files, certificate and secrets into DATA_DIR. A backup of
                       either engine restores into either.
  --files-dir DIR      the stored files go into that directory (serve --files-dir, shared by the
                       nodes), added beside what it holds; default DATA_DIR/files.`,
  'migrate-db': `usage: mdm-console migrate-db --to postgres://USER:PASSWORD@HOST:PORT/DATABASE [--data-dir DATA_DIR]
                            [--secret-key-file FILE] [--json]

Copies the SQLite database of DATA_DIR (its server stopped) into an empty PostgreSQL database, in
one transaction that commits only once every table's row count and checksum match on both sides
and every stored file and package matches its SHA-256; then prints the serve command to run
next. The stored files stay in DATA_DIR/files; the SQLite file is left as it was. A database
holding MDM Console data, or other tables, is refused. Ctrl+C rolls the copy back.
  --to URL     the PostgreSQL database (or $MDM_CONSOLE_DATABASE_URL); its user must be able to
               create tables in it (its owner). See docs/scaling.md.
  --secret-key-file FILE   the cluster key the SMTP password is encrypted with in the database
               (or $MDM_CONSOLE_SECRET_KEY; default DATA_DIR/secret-key, written when missing)`,
};

export const OVERALL_USAGE = `mdm-console — device-enrollment console and backend

Usage: mdm-console <command> [options]        (or: npm run cli -- <command> [options])
       mdm-console <command> --help           that command's usage

  serve       run the backend and the web console (see serve --help for its flags)
  invite      --email E [--firstname F] [--lastname L] [--fleet NAME] [--days D] [--no-email]
  invite      --csv FILE [--no-email] [--skip-invalid]   one invitation per row (all or nothing, or skip the bad ones)
  invitations [--status pending|enrolled|expired|revoked] [--search TEXT]
  revoke      ID                                         revoke a pending invitation
  resend      ID                                         email the invitation again (same link and expiry)
  code create --name N [--fleet F] [--domain D]... [--max-uses K] [--days D] [--approval manual]
                                                         one enrollment code (QR) for many devices
  codes | code revoke ID | code rotate ID                list, revoke, new tokens (printed copies stop working)
  approve AGENT_ID | reject AGENT_ID                     a device enrolled with a code needing approval
  mail        status | test --to ADDRESS | retry         mail transport, test email, retry failed emails
  devices     [--where EXPR] [--view NAME] [--fleet NAME]  devices, or those a filter selects (docs/where.md); also: agents
  views | view add NAME --where EXPR | view edit NAME [--where EXPR] [--name N] | view rm NAME
                                                         saved device views (dynamic groups) with live counts
  command     AGENT_ID ping|lock|unlock|wipe|unenroll|inventory|geolocate [--fleet NAME] [--no-wait]
                                                         a command to a device over MQTT (--fleet moves it)
  command     (--ids 1,2,3 | --fleet NAME | --where EXPR | --view NAME)... ACTION [--yes --count N]
                                                         one bulk job on every device selected: ping, lock, unlock,
                                                         inventory, locate, move --to F, policy, deploy, unenroll,
                                                         wipe, delete (the last three ask for the count)
  jobs | job ID [--status S]                             bulk jobs, and each device's result in one
  fleets | fleet add NAME | fleet rename ID|NAME NEW_NAME | fleet delete ID|NAME
  file add PATH | package add PATH | files | packages | file rm ID | package rm ID
  deploy      file:ID|package:ID (--fleet NAME|ID | --agent ID) [--destination PATH] [--keep-on-remove]
                                                         publish a file or package to a fleet or one device
  deployments [--fleet NAME] [--agent ID] [--all]        deployments and their progress
  deployment  [status] ID                                each device's task; package installs verified by inventory
  undeploy    ID                                         remove a deployment (and, unless kept, what it installed)
  policies    [--category TEXT]                          the policy catalogue
  policy      set SYMBOL VALUE | unset SYMBOL|ID | status   (--fleet NAME|ID | --agent ID | --view NAME)
                                                         a policy on a fleet, a device or a saved view, and its progress
  compliance  [--fleet NAME|ID] [--view NAME] [--state S]  each device: compliant, pending, failing or none
  report      enrollments|online|compliance|os|models|deployments [--days N] [--fleet NAME|ID] [--csv]
                                                         the fleet's daily figures (the console's Reports)
  agent       --deeplink URL --email E [--serial S] [--uuid U] [--type android|apple]
              [--download file:ID|package:ID] [--stay]   the device simulator (with --stay it obeys policies)
              [--android-version V] [--system]
  status                                                 where the running server is, and a sign-in link
  console     [--as EMAIL]                               a new one-time link that opens the console signed in
  whoami                                                 the account (and API token) the CLI acts as
  tokens | token revoke ID                               API tokens (yours; the owner sees all) and revoking one
  token create --name N --role owner|admin|operator|observer [--fleet NAME|ID]... [--days D]
                                                         a personal API token, printed once; --fleet scopes
                                                         an operator or observer token to those fleets
  admins                                                 the admins: role, status, last sign-in
  admin add EMAIL --role owner|admin|operator|observer [--fleet NAME|ID]... [--name N] [--days D] [--no-email]
                                                         invite an admin (emails the set-up link; --no-email prints it)
  admin set EMAIL --role R [--fleet NAME|ID]... [--all-fleets] | admin invite-again EMAIL | admin disable|enable|delete|reset-two-factor EMAIL
                                                         change a role, a new link, disable, enable, delete, reset 2FA
  audit       [--actor NAME|EMAIL|TOKEN] [--action A|PREFIX.] [--target NAME] [--since ISO] [--until ISO] [--limit N]
                                                         the audit trail: who did what, from where, when, what changed
  audit --format csv|jsonl [the same filters]            every matching entry, streamed to stdout (> audit.csv)
  alerts      [--state open|resolved|all]                alert rules and their incidents
  alert add   KIND [--days N|--hours N] [--fleet NAME|ID] [--email ADDR]... [--webhook ID]... [--name N]
                                                         a rule: device_silent, task_failed, approval_waiting,
                                                         compliance_lost, invitation_expiring, broker_unreachable,
                                                         smtp_unreachable (docs/alerts.md)
  alert       rm|enable|disable ID
  webhooks                                               webhooks, each with its last delivery
  webhook add URL [--secret S|--secret-file FILE] [--name N]   a signed webhook (no secret: one is drawn, printed once)
  webhook     rm|enable|disable ID | test ID [--no-wait] | log ID [--limit N]
                                                         send a test event; the delivery log
  export      devices|invitations|codes|code-uses|results|jobs|job-results|audit [--format csv|jsonl] [--out FILE] [filters]
                                                         a list as CSV or JSON lines, streamed (export --help)
  backup      DIR                                        copy the database and files (also while running)
  restore     DIR                                        put a backup back (server stopped)
  migrate-db  --to postgres://USER:PASSWORD@HOST:PORT/DB  move a stopped server's SQLite data to an empty PostgreSQL

Every command but serve, agent, backup, restore and migrate-db talks to the server of --data-dir (default:
$MDM_CONSOLE_DATA_DIR or the per-user data folder) and prints JSON with --json; backup, restore and migrate-db
work on the data dir's files, with no server needed (restore and migrate-db insist there is none).
With $MDM_CONSOLE_TOKEN set to a personal API token, commands act as that token (its account and role)
instead of with the data dir's admin token.`;
