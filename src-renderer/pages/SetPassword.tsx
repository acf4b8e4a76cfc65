import { Alert, Button, Center, Loader, Paper, PasswordInput, Stack, Text, TextInput, Title } from '@mantine/core';
import { IconAlertTriangle, IconLink, IconLogin, IconUserCheck } from '@tabler/icons-react';
import { useQuery } from '@tanstack/react-query';
import { useState, type FormEvent, type ReactNode } from 'react';
import { admin, AdminApiError, errorMessage } from '../api/client.ts';
import { useLocation } from '../lib/router.tsx';
import { MIN_PASSWORD_LENGTH } from '../../src-shared/contract/rules.ts';
import { formatDateTime } from '../lib/format.ts';
import { EnrolAtSignIn } from '../features/two-factor.tsx';

const ROLE_WORDS = {
  owner: 'an owner: everything, accounts and settings included',
  admin: 'an admin: everything but accounts',
  operator: 'an operator: day-to-day helpdesk actions',
  observer: 'an observer: you can see everything, change nothing',
} as const;

function Card({ title, children }: { title: string; children: ReactNode }) {
  return (
    <Center mih="100vh" p="md">
      <title>{`${title} · MDM Console`}</title>
      <Paper withBorder radius="md" p="xl" maw={560} w="100%" component="main">
        {children}
      </Paper>
    </Center>
  );
}

/** The link no longer works (used, replaced, expired, unknown): say which, and where to go instead. */
function LinkGone({ message }: { message: string }) {
  return (
    <Card title="This link no longer works">
      <Stack gap="md" data-testid="set-password-gone">
        <Title order={1} size="h2">
          This link no longer works
        </Title>
        <Alert color="orange" variant="light" icon={<IconLink size={18} />}>
          {message}
        </Alert>
        <Button component="a" href="/sign-in" variant="default" leftSection={<IconLogin size={16} />}>
          Go to the sign-in page
        </Button>
      </Stack>
    </Card>
  );
}

/**
 * The page an invited admin's link opens (`/set-password?token=…`): whom it is for and with which
 * role; they choose their password (and may correct their name) and are signed in. A used,
 * replaced or expired link gets a clear page instead of the form.
 */
export function SetPasswordPage() {
  const { search } = useLocation();
  const token = new URLSearchParams(search).get('token') ?? '';
  const info = useQuery({
    queryKey: ['account-invitation', token],
    queryFn: ({ signal }) => admin.accountInvitation({ query: { token }, signal }),
    enabled: token !== '',
    retry: false,
  });
  const [name, setName] = useState<string | null>(null);
  const [password, setPassword] = useState('');
  const [again, setAgain] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [gone, setGone] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  /** The enrolment challenge, when the owner requires two-factor: set up before the console. */
  const [enrol, setEnrol] = useState<string | null>(null);

  if (token === '') return <LinkGone message="This page needs the link from your invitation email, whole." />;
  if (gone) return <LinkGone message={gone} />;
  if (info.isPending) {
    return (
      <Card title="Choose your password">
        <Center>
          <Loader aria-label="Reading the invitation" />
        </Center>
      </Card>
    );
  }
  if (info.isError) {
    if (info.error instanceof AdminApiError && (info.error.status === 410 || info.error.status === 400)) {
      return <LinkGone message={info.error.message} />;
    }
    return (
      <Card title="Choose your password">
        <Alert color="red" icon={<IconAlertTriangle size={18} />}>
          {errorMessage(info.error)}
        </Alert>
      </Card>
    );
  }
  const invitation = info.data;
  if (enrol !== null) {
    return (
      <Card title="Set up two-factor sign-in">
        <Title order={1} size="h2">
          Set up two-factor sign-in
        </Title>
        <EnrolAtSignIn
          challenge={enrol}
          email={invitation.email}
          landing="/"
          onRestart={() => window.location.assign('/sign-in')}
        />
      </Card>
    );
  }
  const shownName = name ?? (invitation.display_name === invitation.email ? '' : invitation.display_name);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (password.length < MIN_PASSWORD_LENGTH) {
      setError(`The password needs at least ${MIN_PASSWORD_LENGTH} characters.`);
      return;
    }
    if (password !== again) {
      setError('The two passwords differ.');
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const answer = await admin.acceptAccountInvitation({
        body: { token, password, ...(shownName.trim() ? { display_name: shownName.trim() } : {}) },
      });
      // The owner requires two-factor sign-in: set it up now, before the console.
      if (!answer.signed_in) setEnrol(answer.challenge);
      else window.location.assign('/');
    } catch (failure) {
      if (failure instanceof AdminApiError && failure.status === 410) setGone(failure.message);
      else setError(errorMessage(failure));
    } finally {
      setBusy(false);
    }
  };

  return (
    <Card title="Choose your password">
      <form onSubmit={(e) => void submit(e)} noValidate data-testid="set-password-form">
        <Stack gap="md">
          <div>
            <Title order={1} size="h2">
              Welcome to MDM Console
            </Title>
            <Text c="dimmed" size="sm" mt={4}>
              {invitation.invited_by ?? 'An owner'} invited you as {ROLE_WORDS[invitation.role]}. Choose your password: you then
              sign in with your email and it. This link works once, until {formatDateTime(invitation.expires_at)}.
            </Text>
          </div>
          <TextInput label="Email" value={invitation.email} readOnly autoComplete="username" data-testid="set-password-email" />
          <TextInput
            label="Your name"
            description="As the console shows it to the other admins"
            value={shownName}
            onChange={(e) => setName(e.currentTarget.value)}
            autoComplete="name"
            data-testid="set-password-name"
          />
          <PasswordInput
            label="Password"
            description={`At least ${MIN_PASSWORD_LENGTH} characters`}
            value={password}
            onChange={(e) => setPassword(e.currentTarget.value)}
            autoComplete="new-password"
            autoFocus
            data-testid="set-password-password"
          />
          <PasswordInput
            label="Password, again"
            value={again}
            onChange={(e) => setAgain(e.currentTarget.value)}
            autoComplete="new-password"
            error={error}
            data-testid="set-password-again"
          />
          <Button type="submit" loading={busy} leftSection={<IconUserCheck size={16} />} data-testid="set-password-submit">
            Set my password and sign in
          </Button>
        </Stack>
      </form>
    </Card>
  );
}
