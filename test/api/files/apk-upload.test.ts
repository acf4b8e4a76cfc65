// Hostile APKs uploaded over real HTTP to a real server in a process of its own: a binary
// manifest with a chunk of size 0 (app-info-parser looped forever on the server's only thread),
// a 1 MiB zip bomb whose manifest is 1 GiB (inflated into memory: +2 GiB), and a zip whose
// manifest under-declares its size (the upload got no answer). Each is refused with a 422 that
// says why, nothing is stored, the server answers other requests meanwhile and stops on SIGTERM;
// the admin may keep such an upload as the package they describe.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChildBackend, type ChildBackend } from '../../helpers/child-backend.ts';
import { underDeclaredApk, zeroSizeChunkApk, zipBombApk } from '../../helpers/hostile-apk.ts';

const FIELD_APP = readFileSync(fileURLToPath(new URL('../../fixtures/field-app.apk', import.meta.url)));
const MiB = 1024 * 1024;

let server: ChildBackend;
let auth: Record<string, string>;

beforeAll(async () => {
  server = await startChildBackend();
  auth = { authorization: `Bearer ${server.info.admin_token}` };
});
afterAll(async () => {
  await server?.stop();
});

async function upload(name: string, body: Buffer, query = '') {
  const response = await fetch(`${server.info.admin_url}/api/packages?name=${encodeURIComponent(name)}${query}`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/octet-stream' },
    body,
    // Without an answer (the bug), fail here rather than at the test's timeout.
    signal: AbortSignal.timeout(20_000),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function packageNames(): Promise<string[]> {
  const response = await fetch(`${server.info.admin_url}/api/packages`, { headers: auth, signal: AbortSignal.timeout(10_000) });
  return ((await response.json()) as Array<{ name: string }>).map((item) => item.name);
}

/** One agent API request (initSession without a token answers 401 at once): is the server's thread free? */
async function agentAnswers(): Promise<number> {
  const response = await fetch(`${server.info.api_url}/initSession`, { signal: AbortSignal.timeout(10_000) });
  await response.arrayBuffer();
  return response.status;
}

describe('hostile APKs are refused with a reason, and nothing is stored', () => {
  it('a binary manifest with a chunk of size 0 (152 bytes)', async () => {
    const apk = zeroSizeChunkApk();
    expect(apk.length).toBeLessThan(200);
    const answer = await upload('crafted.apk', apk);
    expect(answer.status).toBe(422);
    expect(answer.body).toEqual({
      error: 'ERROR_APK_UNREADABLE',
      message:
        "this APK's manifest could not be read: AndroidManifest.xml: a chunk at byte 8 has an impossible size (0 bytes, header 8 bytes)",
    });
    expect(await agentAnswers()).toBe(401);
    expect(await packageNames()).not.toContain('crafted.apk');
  });

  it('a 1 MiB zip bomb whose manifest is 1 GiB: refused by its declared size, memory stays bounded', async () => {
    const apk = zipBombApk();
    expect(apk.length).toBeLessThan(1.1 * MiB);
    const before = server.rss();
    const answer = await upload('bomb.apk', apk);
    const after = server.rss();
    expect(answer.status).toBe(422);
    expect(answer.body.message).toBe(
      "this APK's manifest could not be read: AndroidManifest.xml declares 1073741824 bytes, more than the 8388608 bytes accepted",
    );
    // app-info-parser inflated it whole: +2 GiB. A worker thread and the upload's buffers remain.
    expect(after - before).toBeLessThan(150 * MiB);
    expect(await packageNames()).not.toContain('bomb.apk');
  });

  it('a manifest that declares 16 bytes and inflates to 64 MiB: stopped at the declared size', async () => {
    const answer = await upload('liar.apk', underDeclaredApk());
    expect(answer.status).toBe(422);
    expect(answer.body.message).toBe(
      "this APK's manifest could not be read: AndroidManifest.xml inflates to more than the 16 bytes it declares",
    );
    expect(await packageNames()).not.toContain('liar.apk');
  });

  it('anything else named .apk (no zip, no manifest) is refused the same way', async () => {
    const notZip = await upload('notes.apk', Buffer.from('just some text, not an archive'));
    expect(notZip.status).toBe(422);
    expect(notZip.body.message).toBe(
      "this APK's manifest could not be read: it is not a zip archive (no end of central directory)",
    );
    // declared as an APK by its type, whatever its name
    const typed = await upload('download.bin', Buffer.from('PK'), '&mime_type=application/vnd.android.package-archive');
    expect(typed.status).toBe(422);
  });
});

describe('the server stays available while hostile APKs are read', () => {
  it('answers the agent and admin APIs while a dozen hostile uploads are under way', async () => {
    const hostile = [zeroSizeChunkApk(), zipBombApk(), underDeclaredApk()];
    const uploads = Array.from({ length: 12 }, (_, i) => upload(`storm-${i}.apk`, hostile[i % 3]!));
    const meanwhile = await Promise.all([agentAnswers(), agentAnswers(), packageNames()]);
    expect(meanwhile.slice(0, 2)).toEqual([401, 401]);
    const answers = await Promise.all(uploads);
    expect(answers.map((answer) => answer.status)).toEqual(Array(12).fill(422));
    expect((await packageNames()).filter((name) => name.startsWith('storm-'))).toEqual([]);
  });
});

describe("the admin's choice: keep as the package they describe, or refuse", () => {
  it('if_unreadable=keep stores it with the package name and version given', async () => {
    const answer = await upload(
      'crafted.apk',
      zeroSizeChunkApk(),
      '&if_unreadable=keep&package_name=org.example.kept&version_code=7&version_name=1.0-kept',
    );
    expect(answer.status).toBe(201);
    expect(answer.body).toMatchObject({
      name: 'crafted.apk',
      package_name: 'org.example.kept',
      version_code: 7,
      version_name: '1.0-kept',
      label: null,
      icon: null,
    });
  });

  it('keep needs the package name and version code, asked before the body is read', async () => {
    const answer = await upload('crafted.apk', zeroSizeChunkApk(), '&if_unreadable=keep&package_name=org.example.kept');
    expect(answer.status).toBe(400);
    expect(answer.body.message).toMatch(/if_unreadable=keep needs package_name and version_code/);
    const bad = await upload('crafted.apk', zeroSizeChunkApk(), '&if_unreadable=maybe');
    expect(bad.status).toBe(400);
  });

  it('a readable APK is described by its manifest, whatever the choice', async () => {
    for (const query of ['', '&if_unreadable=refuse', '&if_unreadable=keep&package_name=org.example.other&version_code=1']) {
      const answer = await upload('field-app.apk', FIELD_APP, query);
      expect(answer.status, query).toBe(201);
      expect(answer.body).toMatchObject({
        package_name: 'org.example.fieldapp',
        version_code: 42,
        version_name: '4.2.0',
        label: 'Field App',
      });
      expect(answer.body.icon).toMatch(/^data:image\/png;base64,iVBORw0KGgo/);
    }
  });
});

describe('stopping', () => {
  it('the server stops on SIGTERM right after a hostile APK was sent', async () => {
    const own = await startChildBackend();
    try {
      const sent = fetch(`${own.info.admin_url}/api/packages?name=crafted.apk`, {
        method: 'POST',
        headers: { authorization: `Bearer ${own.info.admin_token}`, 'content-type': 'application/octet-stream' },
        body: zeroSizeChunkApk(),
      }).then(
        (response) => response.status,
        () => 'no answer',
      );
      // The answer, or after a while none (app-info-parser's endless loop): then SIGTERM either way.
      const answer = await Promise.race([sent, new Promise((resolve) => setTimeout(() => resolve('no answer yet'), 5_000))]);
      const exited = new Promise<number | null>((resolve) => own.child.once('exit', (code) => resolve(code)));
      own.child.kill('SIGTERM');
      const code = await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve('still running'), 10_000))]);
      expect({ answer, code }).toEqual({ answer: 422, code: 0 });
    } finally {
      if (own.child.exitCode === null) own.child.kill('SIGKILL');
      await own.stop();
    }
  });
});
