import { Alert, Button, Center, Paper, PasswordInput, Stack, Text, TextInput, Title } from '@mantine/core';
import { IconAlertTriangle, IconUserShield } from '@tabler/icons-react';
import { useState, type FormEvent } from 'react';
import { admin, errorMessage } from '../api/client.ts';
import { useLocation } from '../lib/router.tsx';
import { MIN_PASSWORD_LENGTH } from '../../src-shared/contract/accounts.ts';

/**
 * The one-time set-up link `serve` prints on first start: the first person to open it chooses the
 * owner's email, name and password, and is signed in. The link works once.
 */
export function SetupPage() {
  const { search } = useLocation();
  const token = new URLSearchParams(search).get('token') ?? '';
  const [email, setEmail] = useState('');
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const [again, setAgain] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const problem = (): string | null => {
    if (!/^[^\s@]+@[^\s@]+$/.test(email.trim())) return 'Enter an email address (you sign in with it).';
    if (!name.trim()) return 'Enter your name, as the console should show it.';
    if (password.length < MIN_PASSWORD_LENGTH) return `The password needs at least ${MIN_PASSWORD_LENGTH} characters.`;
    if (password !== again) return 'The two passwords differ.';
    return null;
  };

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const wrong = problem();
    if (wrong) {
      setError(wrong);
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await admin.setUpOwner({ token, email: email.trim(), display_name: name.trim(), password });
      window.location.assign('/');
    } catch (failure) {
      setError(errorMessage(failure));
    } finally {
      setBusy(false);
    }
  };

  return (
    <Center mih="100vh" p="md">
      <title>Set up the owner · MDM Console</title>
      <Paper withBorder radius="md" p="xl" maw={560} w="100%" component="main">
        <form onSubmit={(e) => void submit(e)} noValidate data-testid="setup-form">
          <Stack gap="md">
            <div>
              <Title order={1} size="h2">
                Set up the owner
              </Title>
              <Text c="dimmed" size="sm" mt={4}>
                You are the first person here: choose the owner&apos;s email and password. The owner can do everything, accounts
                and settings included. This link works once.
              </Text>
            </div>
            {!token ? (
              <Alert color="orange" variant="light" icon={<IconAlertTriangle size={18} />}>
                This page needs the set-up link that <code>serve</code> printed when it started.
              </Alert>
            ) : null}
            <TextInput
              label="Email"
              type="email"
              value={email}
              onChange={(e) => setEmail(e.currentTarget.value)}
              autoComplete="username"
              autoFocus
              data-testid="setup-email"
            />
            <TextInput
              label="Your name"
              value={name}
              onChange={(e) => setName(e.currentTarget.value)}
              autoComplete="name"
              data-testid="setup-name"
            />
            <PasswordInput
              label="Password"
              description={`At least ${MIN_PASSWORD_LENGTH} characters`}
              value={password}
              onChange={(e) => setPassword(e.currentTarget.value)}
              autoComplete="new-password"
              data-testid="setup-password"
            />
            <PasswordInput
              label="Password, again"
              value={again}
              onChange={(e) => setAgain(e.currentTarget.value)}
              autoComplete="new-password"
              error={error}
              data-testid="setup-password-again"
            />
            <Button type="submit" loading={busy} leftSection={<IconUserShield size={16} />} data-testid="setup-submit">
              Create the owner and sign in
            </Button>
          </Stack>
        </form>
      </Paper>
    </Center>
  );
}
