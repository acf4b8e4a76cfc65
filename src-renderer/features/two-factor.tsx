import { Alert, Button, Code, CopyButton, Group, Image, SimpleGrid, Stack, Text, TextInput } from '@mantine/core';
import { IconCheck, IconCopy, IconDownload, IconShieldLock } from '@tabler/icons-react';
import { useState, type FormEvent } from 'react';
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
