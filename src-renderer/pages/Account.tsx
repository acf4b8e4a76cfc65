import { Alert, Badge, Button, Card, Group, Modal, PasswordInput, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { IconDeviceDesktop, IconKey, IconLogout, IconShieldCheck, IconShieldLock, IconShieldOff } from '@tabler/icons-react';
import { useMutation } from '@tanstack/react-query';
import { useState, type FormEvent, type ReactNode } from 'react';
import {
  useAdminSessions,
  useChangePassword,
  useConfirmTwoFactor,
  useDisableTwoFactor,
  useEndOtherSessions,
  useEndSession,
  useMe,
  useTwoFactor,
} from '../api/accounts.ts';
import { admin, errorMessage } from '../api/client.ts';
import type { AdminSessionInfo, TwoFactorSetup } from '../../src-shared/contract/index.ts';
import { MIN_PASSWORD_LENGTH } from '../../src-shared/contract/rules.ts';
import { confirmAction, notifyError, notifySuccess, PageHeader, QueryView, RelativeTime } from '../components/common.tsx';
import { EnrolTwoFactor, RecoveryCodesNotice } from '../features/two-factor.tsx';
import { formatDateTime } from '../lib/format.ts';
import { describeUserAgent } from '../lib/user-agent.ts';

function Part({
  title,
  description,
  children,
  testId,
}: {
  title: string;
  description: ReactNode;
  children: ReactNode;
  testId: string;
}) {
  return (
    <Card withBorder radius="md" p="lg" data-testid={testId}>
      <Title order={2} size="h4">
        {title}
      </Title>
      <Text size="sm" c="dimmed" mt={2} mb="md">
        {description}
      </Text>
      {children}
    </Card>
  );
}

/** Two-factor sign-in: on (since when, codes left; off with a code) or off (enrol an app here). */
function TwoFactorPart() {
  const status = useTwoFactor();
  const confirm = useConfirmTwoFactor();
  const disable = useDisableTwoFactor();
  const start = useMutation({ mutationFn: () => admin.twoFactor.setup() });
  const [setup, setSetup] = useState<TwoFactorSetup | null>(null);
  const [codes, setCodes] = useState<string[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [turningOff, setTurningOff] = useState(false);
  const [offCode, setOffCode] = useState('');
  const [offError, setOffError] = useState<string | null>(null);

  const begin = () =>
    start.mutate(undefined, {
      onSuccess: (answer) => {
        setSetup(answer);
        setError(null);
      },
      onError: (failure) => notifyError('Could not start the set-up', failure),
    });
  const finish = (code: string) =>
    confirm.mutate(code, {
      onSuccess: (answer) => {
        setSetup(null);
        setCodes(answer.recovery_codes);
      },
      onError: (failure) => setError(errorMessage(failure)),
    });
  const turnOff = (event: FormEvent) => {
    event.preventDefault();
    if (!offCode.trim()) {
      setOffError('Type a code of the app, or a recovery code.');
      return;
    }
    disable.mutate(offCode.trim(), {
      onSuccess: () => {
        setTurningOff(false);
        setOffCode('');
        notifySuccess('Two-factor sign-in is off: your password alone signs you in.');
      },
      onError: (failure) => setOffError(errorMessage(failure)),
    });
  };

  return (
    <Part
      title="Two-factor sign-in"
      testId="two-factor-part"
      description="After your password, a six-digit code from an authenticator app on your phone: a stolen password alone no longer signs anyone in."
    >
      <QueryView query={status}>
        {(state) =>
          codes ? (
            <RecoveryCodesNotice codes={codes} doneLabel="I have saved them" onDone={() => setCodes(null)} />
          ) : setup ? (
            <EnrolTwoFactor
              setup={setup}
              busy={confirm.isPending}
              error={error}
              onConfirm={finish}
              onCancel={() => setSetup(null)}
            />
          ) : state.enabled ? (
            <Stack gap="sm">
              <Group gap="sm">
                <Badge
                  color="teal"
                  variant="light"
                  size="lg"
                  leftSection={<IconShieldCheck size={14} />}
                  data-testid="two-factor-state"
                >
                  On
                </Badge>
                <Text size="sm">
                  since {formatDateTime(state.enabled_at)} · {state.recovery_codes_left} of 10 recovery codes left
                </Text>
              </Group>
              {state.recovery_codes_left <= 3 ? (
                <Alert color="orange" variant="light">
                  Few recovery codes left: turn two-factor off and on again for ten new ones.
                </Alert>
              ) : null}
              {state.required ? (
                <Text size="sm" c="dimmed">
                  The owner requires two-factor sign-in for everyone: it cannot be turned off here. Lost your phone? An owner can
                  reset it on the Accounts page.
                </Text>
              ) : (
                <Group>
                  <Button
                    variant="default"
                    color="red"
                    leftSection={<IconShieldOff size={16} />}
                    onClick={() => setTurningOff(true)}
                    data-testid="two-factor-off"
                  >
                    Turn off
                  </Button>
                </Group>
              )}
            </Stack>
          ) : (
            <Stack gap="sm">
              <Group gap="sm">
                <Badge color="gray" variant="light" size="lg" data-testid="two-factor-state">
                  Off
                </Badge>
                {state.required ? (
                  <Text size="sm" c="orange">
                    The owner requires it: you will be asked to set it up at your next sign-in.
                  </Text>
                ) : null}
              </Group>
              <Group>
                <Button
                  leftSection={<IconShieldLock size={16} />}
                  loading={start.isPending}
                  onClick={begin}
                  data-testid="two-factor-start"
                >
                  Set up two-factor sign-in
                </Button>
              </Group>
            </Stack>
          )
        }
      </QueryView>
      <Modal opened={turningOff} onClose={() => setTurningOff(false)} title="Turn off two-factor sign-in">
        <form onSubmit={turnOff} noValidate>
          <Stack gap="md">
            <Text size="sm">Confirm with a code your authenticator app shows now, or with a recovery code.</Text>
            <TextInput
              label="Code"
              value={offCode}
              onChange={(e) => {
                setOffCode(e.currentTarget.value);
                setOffError(null);
              }}
              autoComplete="one-time-code"
              error={offError}
              data-autofocus
            />
            <Group justify="flex-end">
              <Button variant="default" onClick={() => setTurningOff(false)}>
                Cancel
              </Button>
              <Button type="submit" color="red" loading={disable.isPending}>
                Turn off
              </Button>
            </Group>
          </Stack>
        </form>
      </Modal>
    </Part>
  );
}

/** One's own password; the other sessions end when it changes. */
function PasswordPart({ hasPassword }: { hasPassword: boolean }) {
  const change = useChangePassword();
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [again, setAgain] = useState('');
  const [error, setError] = useState<string | null>(null);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (next.length < MIN_PASSWORD_LENGTH) return setError(`The new password needs at least ${MIN_PASSWORD_LENGTH} characters.`);
    if (next !== again) return setError('The two new passwords differ.');
    setError(null);
    change.mutate(
      { current_password: current, new_password: next },
      {
        onSuccess: (answer) => {
          setCurrent('');
          setNext('');
          setAgain('');
          notifySuccess(
            answer.ended_sessions === 0
              ? 'Password changed.'
              : `Password changed. ${answer.ended_sessions} other ${answer.ended_sessions === 1 ? 'session was' : 'sessions were'} signed out.`,
          );
        },
        onError: (failure) => setError(errorMessage(failure)),
      },
    );
  };
  return (
    <Part title="Password" testId="password-part" description="Changing it signs out every other browser signed in as you.">
      {hasPassword ? (
        <form onSubmit={submit} noValidate>
          <Stack gap="sm" maw={360}>
            <PasswordInput
              label="Current password"
              value={current}
              onChange={(e) => setCurrent(e.currentTarget.value)}
              autoComplete="current-password"
            />
            <PasswordInput
              label="New password"
              description={`At least ${MIN_PASSWORD_LENGTH} characters`}
              value={next}
              onChange={(e) => setNext(e.currentTarget.value)}
              autoComplete="new-password"
            />
            <PasswordInput
              label="New password again"
              value={again}
              onChange={(e) => setAgain(e.currentTarget.value)}
              autoComplete="new-password"
              error={error}
            />
            <Group>
              <Button type="submit" loading={change.isPending} leftSection={<IconKey size={16} />}>
                Change password
              </Button>
            </Group>
          </Stack>
        </form>
      ) : (
        <Text size="sm">
          This account has no password yet: the desktop app signs its user in as the owner. Choose the owner’s email and password
          with the set-up link <code>serve</code> prints.
        </Text>
      )}
    </Part>
  );
}

function SessionRow({ session }: { session: AdminSessionInfo }) {
  const end = useEndSession();
  const browser = describeUserAgent(session.user_agent) ?? 'An unknown browser';
  const ask = () =>
    confirmAction(
      {
        title: 'Sign out that session?',
        message: `${browser}, from ${session.address ?? 'an unknown address'}, is signed out at once.`,
        confirmLabel: 'Sign it out',
      },
      () =>
        end.mutate(session.id, {
          onSuccess: () => notifySuccess('That session is signed out.'),
          onError: (failure) => notifyError('Could not sign it out', failure),
        }),
    );
  return (
    <Table.Tr data-testid="session-row" data-current={session.current}>
      <Table.Td>
        <Group gap={6} wrap="nowrap">
          <IconDeviceDesktop size={16} stroke={1.6} />
          <Text size="sm" title={session.user_agent ?? undefined}>
            {browser}
          </Text>
          {session.current ? (
            <Badge size="sm" variant="light" color="teal">
              This browser
            </Badge>
          ) : null}
        </Group>
        <Text size="xs" c="dimmed">
          signed in from {session.address ?? 'an unknown address'} <RelativeTime iso={session.created_at} />
        </Text>
      </Table.Td>
      <Table.Td>
        <Text size="sm">
          <RelativeTime iso={session.last_used_at} />
        </Text>
      </Table.Td>
      <Table.Td>
        <Text size="sm">
          <RelativeTime iso={session.expires_at} future />
        </Text>
      </Table.Td>
      <Table.Td ta="right">
        {session.current ? null : (
          <Button size="compact-sm" variant="default" loading={end.isPending} onClick={ask}>
            Sign out
          </Button>
        )}
      </Table.Td>
    </Table.Tr>
  );
}

/** Where one is signed in: each session, the current one marked; end any, or all others. */
function SessionsPart() {
  const sessions = useAdminSessions();
  const endOthers = useEndOtherSessions();
  const askAll = () =>
    confirmAction(
      {
        title: 'Sign out everywhere else?',
        message: 'Every other browser signed in as you is signed out at once; this one stays signed in.',
        confirmLabel: 'Sign out the others',
      },
      () =>
        endOthers.mutate(undefined, {
          onSuccess: (answer) =>
            notifySuccess(`${answer.ended} other ${answer.ended === 1 ? 'session' : 'sessions'} signed out.`),
          onError: (failure) => notifyError('Could not sign them out', failure),
        }),
    );
  return (
    <Part
      title="Where you are signed in"
      testId="sessions-part"
      description="Each browser signed in to this console as you. A session ends after a while unused, and at its maximum age whatever happens."
    >
      <QueryView query={sessions}>
        {(items) => (
          <Stack gap="sm">
            <Table verticalSpacing="xs" striped={false}>
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Browser</Table.Th>
                  <Table.Th>Last seen</Table.Th>
                  <Table.Th>Ends</Table.Th>
                  <Table.Th />
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {items.map((session) => (
                  <SessionRow key={session.id} session={session} />
                ))}
                {items.length === 0 ? (
                  <Table.Tr>
                    <Table.Td colSpan={4}>
                      <Text size="sm" c="dimmed">
                        No console session: this page is used with an API token.
                      </Text>
                    </Table.Td>
                  </Table.Tr>
                ) : null}
              </Table.Tbody>
            </Table>
            <Group>
              <Button
                variant="default"
                leftSection={<IconLogout size={16} />}
                disabled={items.filter((s) => !s.current).length === 0}
                loading={endOthers.isPending}
                onClick={askAll}
                data-testid="end-other-sessions"
              >
                Sign out all other sessions
              </Button>
            </Group>
          </Stack>
        )}
      </QueryView>
    </Part>
  );
}

/** The signed-in admin's own page: two-factor sign-in, password, sessions. */
export function AccountPage() {
  const me = useMe();
  return (
    <>
      <PageHeader
        title="My account"
        description={
          me.data ? (
            <>
              {me.data.account.display_name}
              {me.data.account.email ? ` · ${me.data.account.email}` : ''} · {me.data.role}
            </>
          ) : null
        }
      />
      <Stack gap="lg" maw={960}>
        <TwoFactorPart />
        <PasswordPart hasPassword={me.data?.account.has_password ?? true} />
        <SessionsPart />
      </Stack>
    </>
  );
}
