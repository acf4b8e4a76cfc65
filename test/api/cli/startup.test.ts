// Starting the server as a user does (the CLI spawned as a process): one server per data dir,
// and every start-up failure a clear message without a stack trace.
import Database from 'better-sqlite3';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { migrations } from '../../../src-main/backend/db/migrations.ts';

// Each test spawns the CLI several times, as a user would: slow on a busy machine, never timed.
vi.setConfig({ testTimeout: 180_000, hookTimeout: 120_000 });

const ROOT = join(import.meta.dirname, '../../..');
const CLI = join(ROOT, 'src-main/cli/main.ts');
const LOOPBACK = [
  '--port',
  '0',
  '--admin-port',
  '0',
  '--mqtt-port',
  '0',
  '--mqtt-tls-port',
  '0',
  '--public-host',
  '127.0.0.1',
  '--host',
  '127.0.0.1',
];
const STACK_LINE = /^\s+at /m;

const dirs: string[] = [];
const servers: ChildProcess[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'mdm-startup-'));
  dirs.push(dir);
  return dir;
}

afterEach(() => {
  for (const server of servers.splice(0)) if (server.exitCode === null && server.signalCode === null) server.kill('SIGKILL');
});
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function cli(args: string[], options: { uid?: number; gid?: number; execPath?: string } = {}) {
  const result = spawnSync(options.execPath ?? process.execPath, [CLI, ...args], {
    encoding: 'utf8',
    timeout: 60_000,
    uid: options.uid,
    gid: options.gid,
    cwd: ROOT,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** Starts `serve` and resolves once it printed its banner. */
async function serve(
  dataDir: string,
  extra: string[] = LOOPBACK,
): Promise<{ process: ChildProcess; info: Record<string, any>; output: () => string }> {
  const child = spawn(process.execPath, [CLI, 'serve', '--data-dir', dataDir, ...extra], { stdio: ['ignore', 'pipe', 'pipe'] });
  servers.push(child);
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const end = Date.now() + 30_000;
  while (!output.includes('Press Ctrl+C')) {
    if (child.exitCode !== null || Date.now() > end) throw new Error(`serve did not start:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { process: child, info: JSON.parse(readFileSync(join(dataDir, 'server.json'), 'utf8')), output: () => output };
}

function expectRefusal(result: { code: number | null; stdout: string; stderr: string }, ...patterns: (RegExp | string)[]) {
  expect(result.code, result.stderr + result.stdout).toBe(1);
  for (const pattern of patterns) expect(result.stderr).toMatch(pattern);
  expect(result.stderr).not.toMatch(STACK_LINE);
  expect(result.stdout).not.toContain('Press Ctrl+C');
}

describe('one server per data dir', () => {
  it('refuses a second serve, naming the running one; takes over the lock of a server killed with -9', async () => {
    const dataDir = tempDir();
    const first = await serve(dataDir);
    const second = cli(['serve', '--data-dir', dataDir, ...LOOPBACK]);
    expectRefusal(second, `pid ${first.process.pid}`, first.info.admin_url, first.info.api_url, 'One server per data dir');
    // The refusal left the first server's record alone: the CLI still finds it.
    expect(JSON.parse(readFileSync(join(dataDir, 'server.json'), 'utf8')).pid).toBe(first.process.pid);
    const status = cli(['status', '--data-dir', dataDir]);
    expect(status.code, status.stderr).toBe(0);

    first.process.kill('SIGKILL');
    await new Promise((resolve) => first.process.once('exit', resolve));
    const third = await serve(dataDir);
    expect(third.info.pid).toBe(third.process.pid);
    expect(cli(['status', '--data-dir', dataDir]).code).toBe(0);
    third.process.kill('SIGTERM');
    await new Promise((resolve) => third.process.once('exit', resolve));
    expect(existsSync(join(dataDir, 'server.json'))).toBe(false);
  });
});

describe('start-up failures say what is wrong and what to do', () => {
  it('a port in use: names the port and its flag', async () => {
    const blocker = createTcpServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const options = (flag: string) => LOOPBACK.map((value, i) => (LOOPBACK[i - 1] === flag ? String(port) : value));
      expectRefusal(
        cli(['serve', '--data-dir', tempDir(), ...options('--port')]),
        `Port ${port} (the agent API and deeplink page) is already in use`,
        'Choose another with --port P',
      );
      expectRefusal(
        cli(['serve', '--data-dir', tempDir(), ...options('--admin-port')]),
        `Port ${port} (the admin API and console) is already in use`,
        '--admin-port A',
      );
      expectRefusal(
        cli(['serve', '--data-dir', tempDir(), ...options('--mqtt-port')]),
        `Port ${port} (the MQTT broker; another broker such as mosquitto?) is already in use`,
        '--mqtt-port M',
      );
      expectRefusal(
        cli(['serve', '--data-dir', tempDir(), ...options('--mqtt-tls-port')]),
        `Port ${port} (the MQTT broker over TLS; another broker such as mosquitto?) is already in use`,
        '--mqtt-tls-port T',
      );
    } finally {
      blocker.close();
    }
  });

  it('a file that is not a database, and a damaged database: names the file and the way out', async () => {
    const garbage = tempDir();
    writeFileSync(join(garbage, 'mdm-console.sqlite'), Buffer.alloc(64 * 1024, 0x5a));
    expectRefusal(
      cli(['serve', '--data-dir', garbage, ...LOOPBACK]),
      `${join(garbage, 'mdm-console.sqlite')} is not an SQLite database`,
      'mdm-console restore',
      'move the file aside',
    );

    const damaged = tempDir();
    const server = await serve(damaged);
    server.process.kill('SIGTERM');
    await new Promise((resolve) => server.process.once('exit', resolve));
    const file = join(damaged, 'mdm-console.sqlite');
    const bytes = readFileSync(file);
    const pageSize = bytes.readUInt16BE(16);
    bytes.fill(0xff, pageSize * 3, pageSize * 5); // two pages of tables, header intact
    writeFileSync(file, bytes);
    expectRefusal(
      cli(['serve', '--data-dir', damaged, ...LOOPBACK]),
      `${file} is damaged`,
      'Restore a backup',
      'move the file aside',
    );
  });

  it('a database from a newer version', () => {
    const dataDir = tempDir();
    const latest = Math.max(...migrations.map((m) => m.version));
    const db = new Database(join(dataDir, 'mdm-console.sqlite'));
    db.pragma(`user_version = ${latest + 3}`);
    db.close();
    expectRefusal(
      cli(['serve', '--data-dir', dataDir, ...LOOPBACK]),
      `written by a newer version of MDM Console (database schema ${latest + 3}; this version knows up to ${latest})`,
      'Run the newer version',
    );
    const db2 = new Database(join(dataDir, 'mdm-console.sqlite'));
    expect(db2.pragma('user_version', { simple: true })).toBe(latest + 3); // untouched
    db2.close();
  });

  it('the database path is a directory; the data dir is a file', () => {
    const dataDir = tempDir();
    mkdirSync(join(dataDir, 'mdm-console.sqlite'));
    expectRefusal(
      cli(['serve', '--data-dir', dataDir, ...LOOPBACK]),
      `The database path ${join(dataDir, 'mdm-console.sqlite')} is a directory`,
    );
    const file = join(tempDir(), 'plain-file');
    writeFileSync(file, 'x');
    expectRefusal(cli(['serve', '--data-dir', file, ...LOOPBACK]), `The data dir ${file} is not a directory`);
  });

  it('an unwritable data dir or database', () => {
    const dataDir = tempDir();
    // root writes anywhere: then the CLI runs as nobody, with a link to this Node binary that
    // nobody may run (the binary's own folder may be private).
    const asRoot = process.getuid?.() === 0;
    let execPath = process.execPath;
    if (asRoot) {
      const bin = tempDir();
      chmodSync(bin, 0o755);
      execPath = join(bin, 'node');
      linkSync(process.execPath, execPath);
      chmodSync(dataDir, 0o755);
    } else chmodSync(dataDir, 0o555);
    const user = asRoot ? { uid: 65534, gid: 65534, execPath } : {};
    expectRefusal(
      cli(['serve', '--data-dir', dataDir, ...LOOPBACK], user),
      `Cannot write to the data dir ${dataDir} (permission denied)`,
      'give your user write access to it, or use another --data-dir',
    );
    expectRefusal(cli(['serve', '--data-dir', join(dataDir, 'inside'), ...LOOPBACK], user), 'Cannot write to the data dir');
    chmodSync(dataDir, 0o700);

    // A writable data dir holding a database the user may not write.
    const shared = tempDir();
    chmodSync(shared, 0o777);
    const file = join(shared, 'mdm-console.sqlite');
    new Database(file).close();
    chmodSync(file, asRoot ? 0o644 : 0o444);
    expectRefusal(
      cli(['serve', '--data-dir', shared, ...LOOPBACK], user),
      `Cannot write to the database ${file} (permission denied)`,
    );
  });
});

describe('backup and restore', () => {
  it('backs up a running server, refuses to restore under it, restores once it stopped', async () => {
    const dataDir = tempDir();
    const server = await serve(dataDir);
    const payload = Buffer.alloc(200_000, 7);
    writeFileSync(join(dataDir, '..', `${dataDir.split('/').pop()}-upload.bin`), payload);
    const upload = join(dataDir, '..', `${dataDir.split('/').pop()}-upload.bin`);
    dirs.push(upload);
    expect(cli(['file', 'add', upload, '--data-dir', dataDir]).code).toBe(0);
    expect(cli(['invite', '--email', 'kept@example.com', '--no-email', '--data-dir', dataDir]).code).toBe(0);

    const backup = join(tempDir(), 'backup-1');
    const made = cli(['backup', backup, '--data-dir', dataDir, '--json']);
    expect(made.code, made.stderr).toBe(0);
    expect(JSON.parse(made.stdout)).toMatchObject({ files: 1, packages: 0, bytes: payload.length });
    expect(readFileSync(join(backup, 'mdm-console.sqlite')).length).toBeGreaterThan(0);
    // Not over an earlier backup.
    expectRefusal(cli(['backup', backup, '--data-dir', dataDir]), 'is not empty');

    expect(cli(['invite', '--email', 'after-backup@example.com', '--no-email', '--data-dir', dataDir]).code).toBe(0);
    expectRefusal(cli(['restore', backup, '--data-dir', dataDir]), `pid ${server.process.pid}`, 'Stop it first');

    server.process.kill('SIGTERM');
    await new Promise((resolve) => server.process.once('exit', resolve));
    // No server needed for a backup either.
    const stopped = cli(['backup', join(tempDir(), 'backup-2'), '--data-dir', dataDir]);
    expect(stopped.code, stopped.stderr).toBe(0);
    const restored = cli(['restore', backup, '--data-dir', dataDir, '--json']);
    expect(restored.code, restored.stderr).toBe(0);
    const previous = JSON.parse(restored.stdout).previous as string;
    expect(existsSync(join(previous, 'mdm-console.sqlite'))).toBe(true);

    await serve(dataDir);
    const listed = JSON.parse(cli(['invitations', '--json', '--data-dir', dataDir]).stdout) as { email: string }[];
    expect(listed.map((i) => i.email)).toEqual(['kept@example.com']);
    const files = JSON.parse(cli(['files', '--json', '--data-dir', dataDir]).stdout) as { size: number }[];
    expect(files).toHaveLength(1);
    const { api_url } = JSON.parse(readFileSync(join(dataDir, 'server.json'), 'utf8'));
    expect(api_url).toMatch(/^http:/);
  });

  it('refuses what is not a backup', () => {
    const notBackup = tempDir();
    expectRefusal(cli(['restore', notBackup, '--data-dir', tempDir()]), 'is not a backup made by mdm-console backup');
    expectRefusal(cli(['backup', join(tempDir(), 'b'), '--data-dir', tempDir()]), 'There is no database to back up');
  });
});

describe('npm start without the Electron binary', () => {
  let mirror: Server;
  afterAll(() => mirror?.close());

  // The path of every fresh machine (and of this workplace, which cannot download Electron); where
  // the binary is installed, that path cannot be reached without deleting it, so it is skipped.
  const installed = existsSync(join(ROOT, 'node_modules/electron/path.txt'));
  it.skipIf(installed)(
    'tries Electron’s own download, then says in one paragraph why it cannot start and what to use instead',
    async () => {
      const requested: string[] = [];
      mirror = createServer((request, response) => {
        requested.push(request.url ?? '');
        response.writeHead(404).end('not here');
      });
      await new Promise<void>((resolve) => mirror.listen(0, '127.0.0.1', resolve));
      const url = `http://127.0.0.1:${(mirror.address() as { port: number }).port}/`;
      const electronDir = join(ROOT, 'node_modules/electron');
      const child = spawn(process.execPath, [join(ROOT, 'scripts/start.ts')], {
        cwd: ROOT,
        env: { ...process.env, ELECTRON_MIRROR: url },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk) => (stdout += chunk));
      child.stderr.on('data', (chunk) => (stderr += chunk));
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      expect(code).toBe(1);
      // Electron's installer asked the mirror for this platform's zip.
      expect(
        requested.some((path) => /electron-v[\d.]+-\w+-\w+\.zip/.test(path)),
        requested.join(', '),
      ).toBe(true);
      const paragraph = stderr.trim();
      const flat = paragraph.replace(/\s+/g, ' ');
      expect(paragraph).toMatch(/^The desktop app cannot start: it runs on Electron [\d.]+/);
      expect(paragraph).toContain(url);
      expect(flat).toContain('npm run serve runs the same backend and gives the same console in your browser');
      expect(paragraph.split('\n\n')).toHaveLength(1);
      expect(stderr + stdout).not.toMatch(STACK_LINE);
      expect(stdout).not.toMatch(/vite|building/i); // nothing was built for an app that cannot run
      expect(existsSync(join(electronDir, 'path.txt'))).toBe(false);
    },
  );
});

describe('CLI usage', () => {
  it('prints each command’s own usage with --help', () => {
    for (const [command, expected] of [
      ['invite', 'usage: mdm-console invite --email E'],
      ['serve', 'usage: mdm-console serve'],
      ['backup', 'usage: mdm-console backup DIR'],
      ['restore', 'usage: mdm-console restore DIR'],
      ['migrate-db', 'usage: mdm-console migrate-db --to postgres://'],
      ['status', 'usage: mdm-console status'],
      ['command', 'usage: mdm-console command AGENT_ID'],
      ['agent', 'usage: mdm-console agent --deeplink URL'],
      ['invitations', 'usage: mdm-console invitations'],
    ] as const) {
      const result = cli([command, '--help']);
      expect(result.code, command).toBe(0);
      expect(result.stdout.startsWith(expected), `${command}: ${result.stdout.slice(0, 80)}`).toBe(true);
    }
    // The overall usage says which commands need the running server: backup, restore and migrate-db do not.
    const overall = cli(['--help']);
    expect(overall.code).toBe(0);
    expect(overall.stdout).toContain('Every command but serve, agent, backup, restore and migrate-db talks to the server');
    const unknown = cli(['invite', '--bogus']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("Unknown option '--bogus'");
    expect(unknown.stderr).toContain('usage: mdm-console invite');
  });
});
