import { Alert, Button, Code, CopyButton, Group, Image, SimpleGrid, Stack, Text, TextInput } from '@mantine/core';
import { IconCheck, IconCopy, IconDownload, IconShieldLock } from '@tabler/icons-react';
import { useEffect, useEffectEvent, useState, type FormEvent } from 'react';
import { admin, AdminApiError, errorMessage } from '../api/client.ts';
import type { TwoFactorSetup } from '../../src-shared/contract/index.ts';

/** The secret in groups of four, as authenticator apps ask for it typed. */
export const groupedSecret = (secret: string) => secret.replace(/(.{4})(?=.)/g, '$1 ');

/**
 * Enrolling an authenticator app: the QR code to scan, the secret to type instead, and the code the
 * app then shows, which confirms it. Used on one's own account page and at sign-in when the owner
 * requires two-factor.
 */
export function EnrolTwoFactor({
  setup,
  busy,
  error,
  onConfirm,
  onCancel,
}: {
  setup: TwoFactorSetup;
  busy: boolean;
  error: string | null;
  onConfirm: (code: string) => void;
  onCancel?: () => void;
}) {
  const [code, setCode] = useState('');
  const [missing, setMissing] = useState(false);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const typed = code.replace(/\s/g, '');
    if (!/^\d{6}$/.test(typed)) {
      setMissing(true);
      return;
    }
    onConfirm(typed);
  };
  return (
    <form onSubmit={submit} noValidate data-testid="two-factor-enrol">
      <Stack gap="md">
        <Text size="sm">
          1. Scan this QR code with an authenticator app on your phone (Google Authenticator, Microsoft Authenticator, 1Password,
          Aegis, FreeOTP…).
        </Text>
        <Image
          src={setup.qr_data_url}
          alt="QR code of the two-factor secret, for an authenticator app"
          w={200}
          h={200}
          radius="sm"
          style={{ imageRendering: 'pixelated', background: 'white' }}
          data-testid="two-factor-qr"
        />
        <div>
          <Text size="sm">Or type this key in the app (time-based, six digits):</Text>
          <Group gap={4} mt={4}>
            <Code fz="md" data-testid="two-factor-secret" style={{ letterSpacing: '0.05em', whiteSpace: 'nowrap' }}>
              {groupedSecret(setup.secret)}
            </Code>
            <CopyButton value={setup.secret} timeout={1500}>
              {({ copied, copy }) => (
                <Button size="compact-xs" variant="subtle" color={copied ? 'teal' : 'gray'} onClick={copy}>
                  {copied ? 'Copied' : 'Copy key'}
                </Button>
              )}
            </CopyButton>
          </Group>
        </div>
        <TextInput
          label="2. The six-digit code the app shows now"
          value={code}
          onChange={(e) => {
            setCode(e.currentTarget.value);
            setMissing(false);
          }}
          inputMode="numeric"
          autoComplete="one-time-code"
          maxLength={9}
          maw={320}
          error={missing ? 'Type the six digits the app shows.' : error}
          data-testid="two-factor-enrol-code"
        />
        <Group gap="sm">
          <Button type="submit" loading={busy} leftSection={<IconShieldLock size={16} />} data-testid="two-factor-enrol-confirm">
            Turn on two-factor sign-in
          </Button>
          {onCancel ? (
            <Button variant="default" onClick={onCancel} disabled={busy}>
              Cancel
            </Button>
          ) : null}
        </Group>
      </Stack>
    </form>
  );
}

/** The ten recovery codes, shown once: each signs in once without the phone. */
export function RecoveryCodesNotice({ codes, onDone, doneLabel }: { codes: string[]; onDone: () => void; doneLabel: string }) {
  const text = `MDM Console recovery codes (each works once)\n\n${codes.join('\n')}\n`;
  const download = () => {
    const url = URL.createObjectURL(new Blob([text], { type: 'text/plain' }));
    const link = document.createElement('a');
    link.href = url;
    link.download = 'mdm-console-recovery-codes.txt';
    link.click();
    URL.revokeObjectURL(url);
  };
  return (
    <Stack gap="md" data-testid="recovery-codes">
      <Alert color="teal" variant="light" icon={<IconCheck size={18} />} title="Two-factor sign-in is on">
        Keep these recovery codes somewhere safe, away from your phone: if you lose it, each code signs you in once instead of the
        app. They are shown only now.
      </Alert>
      <SimpleGrid cols={{ base: 2, xs: 5 }} spacing="xs" verticalSpacing="xs">
        {codes.map((code) => (
          <Code key={code} fz="sm" ta="center" py={6} data-testid="recovery-code">
            {code}
          </Code>
        ))}
      </SimpleGrid>
      <Group gap="sm">
        <CopyButton value={text} timeout={1500}>
          {({ copied, copy }) => (
            <Button variant="default" leftSection={copied ? <IconCheck size={16} /> : <IconCopy size={16} />} onClick={copy}>
              {copied ? 'Copied' : 'Copy all'}
            </Button>
          )}
        </CopyButton>
        <Button variant="default" leftSection={<IconDownload size={16} />} onClick={download}>
          Download as a text file
        </Button>
        <Button onClick={onDone} data-testid="recovery-codes-done">
          {doneLabel}
        </Button>
      </Group>
    </Stack>
  );
}

/**
 * The owner requires two-factor and this admin has none: enrol an app now, before anything else (at
 * sign-in, and at the end of an invited admin's set-up link). `onRestart`: the challenge is gone.
 */
export function EnrolAtSignIn({
  challenge,
  email,
  landing,
  onRestart,
}: {
  challenge: string;
  email: string;
  landing: string;
  onRestart: (why: string) => void;
}) {
  const [setup, setSetup] = useState<TwoFactorSetup | null>(null);
  const [codes, setCodes] = useState<string[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  // The secret is drawn once per challenge, whatever callback the page passes on each render.
  const gone = useEffectEvent((failure: unknown) => onRestart(errorMessage(failure)));
  useEffect(() => {
    let live = true;
    admin
      .beginTwoFactorEnrolment({ body: { challenge } })
      .then((answer) => live && setSetup(answer))
      .catch((failure: unknown) => live && gone(failure));
    return () => {
      live = false;
    };
  }, [challenge]);
  const confirm = async (code: string) => {
    setBusy(true);
    setError(null);
    try {
      const done = await admin.confirmTwoFactorEnrolment({ body: { challenge: challenge, code } });
      setCodes(done.recovery_codes);
    } catch (failure) {
      if (failure instanceof AdminApiError && failure.status === 410) onRestart(errorMessage(failure));
      else setError(errorMessage(failure));
    } finally {
      setBusy(false);
    }
  };
  if (codes) {
    return (
      <Stack mt="md">
        <RecoveryCodesNotice
          codes={codes}
          doneLabel="I have saved them: continue"
          onDone={() => window.location.assign(landing)}
        />
      </Stack>
    );
  }
  return (
    <Stack gap="md" mt="md">
      <Alert color="blue" variant="light" icon={<IconShieldLock size={18} />} data-testid="two-factor-required">
        The owner of this console requires two-factor sign-in. Set it up for <b>{email}</b> now to continue.
      </Alert>
      {setup ? (
        <EnrolTwoFactor setup={setup} busy={busy} error={error} onConfirm={(code) => void confirm(code)} />
      ) : (
        <Text size="sm" c="dimmed">
          Preparing…
        </Text>
      )}
    </Stack>
  );
}

/**
 * Signing in from a browser: an admin's email and password, or (the owner's ways, for the one at
 * the server's keyboard) the admin token or a one-time sign-in link. The server sets
 * the HttpOnly cookie; the page then reloads into the console. Also shown in place of any page
 * when the console finds itself signed out, so it always says what to do.
 */
