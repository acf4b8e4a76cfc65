import {
  Alert,
  Anchor,
  Button,
  Center,
  Code,
  Divider,
  List,
  Paper,
  PasswordInput,
  Stack,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { IconAlertTriangle, IconLogin, IconShieldLock } from '@tabler/icons-react';
import { useCallback, useState, type FormEvent } from 'react';
import { admin, AdminApiError, errorMessage } from '../api/client.ts';
import { EnrolAtSignIn } from '../features/two-factor.tsx';
import { useLocation } from '../lib/router.tsx';

/** After the password: a two-factor code, or enrolment when the owner requires two-factor. */
type SecondStep = { step: 'code' | 'enrol'; challenge: string; email: string };

/** The second step's answer said the challenge is gone (expired, too many wrong codes): back to the password. */
const challengeGone = (failure: unknown) => failure instanceof AdminApiError && failure.status === 410;

/** A code of the authenticator app, or a recovery code. */
function CodeStep({ second, landing, onRestart }: { second: SecondStep; landing: string; onRestart: (why: string) => void }) {
  const [code, setCode] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (!code.trim()) {
      setError('Type the six digits your authenticator app shows, or a recovery code.');
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await admin.signInWithCode({ body: { challenge: second.challenge, code: code.trim() } });
      window.location.assign(landing);
    } catch (failure) {
      if (challengeGone(failure)) onRestart(errorMessage(failure));
      else setError(errorMessage(failure));
      setBusy(false);
    }
  };
  return (
    <form onSubmit={(e) => void submit(e)} noValidate data-testid="two-factor-sign-in">
      <Stack gap="md" mt="md">
        <Text size="sm">
          Two-factor sign-in is on for <b>{second.email}</b>: type the six-digit code your authenticator app shows now. Lost your
          phone? Type one of your recovery codes instead (each works once).
        </Text>
        <TextInput
          label="Code"
          placeholder="123456 or a recovery code"
          value={code}
          onChange={(e) => {
            setCode(e.currentTarget.value);
            setError(null);
          }}
          autoComplete="one-time-code"
          autoFocus
          error={error}
          data-testid="two-factor-code"
        />
        <Button type="submit" loading={busy} leftSection={<IconShieldLock size={16} />} data-testid="two-factor-submit">
          Verify and sign in
        </Button>
        <Anchor component="button" type="button" size="sm" onClick={() => onRestart('')}>
          Use another account
        </Anchor>
      </Stack>
    </form>
  );
}

export function SignInPage() {
  const { search } = useLocation();
  const params = new URLSearchParams(search);
  const usedLink = params.get('link') === 'used';
  // Sent here from a page of the console: the session ended (cookie expired, token changed).
  const from = params.get('from');
  const signedOut = from !== null || params.has('signed-out');
  const [credential, setCredential] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [passwordError, setPasswordError] = useState<string | null>(null);
  const [withToken, setWithToken] = useState(usedLink);
  const [second, setSecond] = useState<SecondStep | null>(null);
  const landing = from && from.startsWith('/') && !from.startsWith('//') ? from : '/';
  const restart = useCallback((why: string) => {
    setSecond(null);
    setPassword('');
    setPasswordError(why || null);
  }, []);

  const submitPassword = async (event: FormEvent) => {
    event.preventDefault();
    if (!email.trim() || !password) {
      setPasswordError('Enter your email and password.');
      return;
    }
    setBusy(true);
    setPasswordError(null);
    try {
      const answer = await admin.signInWithPassword({ body: { email: email.trim(), password } });
      if (answer.signed_in) window.location.assign(landing);
      else setSecond({ step: answer.second_step, challenge: answer.challenge, email: email.trim() });
    } catch (failure) {
      setPasswordError(errorMessage(failure));
    } finally {
      setBusy(false);
    }
  };

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (!credential.trim()) {
      setError('Paste the admin token or a sign-in link first.');
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await admin.signIn({ body: { credential } });
      // A fresh start: every query and the event stream open with the new cookie.
      window.location.assign(landing);
    } catch (failure) {
      // The server's reason (not the token, not a valid link…), or that it cannot be reached.
      setError(errorMessage(failure));
    } finally {
      setBusy(false);
    }
  };

  return (
    <Center mih="100vh" p="md">
      <title>Sign in · MDM Console</title>
      <Paper withBorder radius="md" p="xl" maw={560} w="100%" component="main">
        <Title order={1} size="h2">
          {second?.step === 'enrol' ? 'Set up two-factor sign-in' : signedOut ? 'You are signed out' : 'Sign in to MDM Console'}
        </Title>
        {second?.step === 'code' ? <CodeStep second={second} landing={landing} onRestart={restart} /> : null}
        {second?.step === 'enrol' ? (
          <EnrolAtSignIn challenge={second.challenge} email={second.email} landing={landing} onRestart={restart} />
        ) : null}
        {second ? null : (
          <>
            <form onSubmit={(e) => void submitPassword(e)} noValidate data-testid="password-sign-in">
              <Stack gap="md" mt="md">
                <TextInput
                  label="Email"
                  type="email"
                  value={email}
                  onChange={(e) => {
                    setEmail(e.currentTarget.value);
                    setPasswordError(null);
                  }}
                  autoComplete="username"
                  autoFocus={!withToken}
                  data-testid="sign-in-email"
                />
                <PasswordInput
                  label="Password"
                  value={password}
                  onChange={(e) => {
                    setPassword(e.currentTarget.value);
                    setPasswordError(null);
                  }}
                  error={passwordError}
                  autoComplete="current-password"
                  data-testid="sign-in-password"
                />
                <Button type="submit" loading={busy} leftSection={<IconLogin size={16} />} data-testid="sign-in-submit">
                  Sign in
                </Button>
              </Stack>
            </form>
            <Divider my="lg" label="or, as the owner, at the server" labelPosition="center" />
            {!withToken ? (
              <Anchor component="button" type="button" size="sm" onClick={() => setWithToken(true)} data-testid="use-token">
                Use the admin token or a one-time sign-in link instead
              </Anchor>
            ) : (
              <form onSubmit={(e) => void submit(e)} noValidate>
                <Stack gap="md">
                  <Text c="dimmed" size="sm">
                    Paste the admin token of this server, or a one-time sign-in link: either signs you in as the owner.
                  </Text>
                  {usedLink ? (
                    <Alert color="orange" variant="light" icon={<IconAlertTriangle size={18} />} data-testid="used-link">
                      That sign-in link has already been used or has expired: each link works once, within 15 minutes. Get a new
                      one as shown below.
                    </Alert>
                  ) : null}
                  <PasswordInput
                    label="Admin token or sign-in link"
                    placeholder="http://127.0.0.1:8081/auth?ticket=… or the token"
                    value={credential}
                    onChange={(e) => {
                      setCredential(e.currentTarget.value);
                      setError(null);
                    }}
                    error={error}
                    autoComplete="off"
                    autoFocus={withToken}
                    data-testid="sign-in-credential"
                  />
                  <Button type="submit" variant="default" loading={busy} leftSection={<IconLogin size={16} />}>
                    Sign in as the owner
                  </Button>
                  <div>
                    <Text size="sm" fw={600} mb={4}>
                      Where to find them
                    </Text>
                    <List size="sm" spacing={6}>
                      <List.Item>
                        A new sign-in link: run <Code>npm run cli -- console</Code> (or <Code>mdm-console console</Code>) on this
                        computer, in the project folder. It prints a link; open it, or paste it here.
                      </List.Item>
                      <List.Item>
                        The admin token: the file <Code>admin-token</Code> in the server&apos;s data folder (
                        <Code>npm run serve</Code> names the folder when it starts).
                      </List.Item>
                      <List.Item>The desktop app opens the console signed in: nothing to paste there.</List.Item>
                    </List>
                  </div>
                </Stack>
              </form>
            )}
          </>
        )}
      </Paper>
    </Center>
  );
}
