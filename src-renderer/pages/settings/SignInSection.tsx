import { Button, Group, NumberInput, SimpleGrid, Stack, Switch, Text } from '@mantine/core';
import { IconDeviceFloppy } from '@tabler/icons-react';
import { useEffect, useState, type FormEvent } from 'react';
import { useSignInSettings, useUpdateSignInSettings } from '../../api/accounts.ts';
import { useCan } from '../../components/permissions.tsx';
import { errorMessage } from '../../api/client.ts';
import type { SignInSettings } from '../../../src-shared/contract/index.ts';
import { notifySuccess, QueryView } from '../../components/common.tsx';
import { Section } from './Section.tsx';

function SignInForm({ settings, canChange, refusal }: { settings: SignInSettings; canChange: boolean; refusal: string | null }) {
  const save = useUpdateSignInSettings();
  const [form, setForm] = useState(settings);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => setForm(settings), [settings]);
  const changed = (Object.keys(settings) as (keyof SignInSettings)[]).filter((key) => form[key] !== settings[key]);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (form.session_idle_minutes > form.session_max_age_hours * 60) {
      setError('A session cannot stay unused longer than it may last at most.');
      return;
    }
    setError(null);
    save.mutate(Object.fromEntries(changed.map((key) => [key, form[key]])), {
      onSuccess: () => notifySuccess('Sign-in settings saved.'),
      onError: (failure) => setError(errorMessage(failure)),
    });
  };
  const reason = canChange ? undefined : (refusal ?? 'Only the owner changes the sign-in settings.');
  return (
    <form onSubmit={submit} noValidate data-testid="sign-in-settings">
      <Stack gap="md">
        <Switch
          label="Require two-factor sign-in for every admin"
          description="An admin without it sets it up at their next sign-in, before reaching anything else."
          checked={form.require_two_factor}
          onChange={(e) => setForm({ ...form, require_two_factor: e.currentTarget.checked })}
          disabled={!canChange}
          data-testid="require-two-factor"
        />
        <SimpleGrid cols={{ base: 1, sm: 2 }}>
          <NumberInput
            label="Sign out after this long unused (minutes)"
            description="5 minutes to 30 days; 720 = 12 hours"
            min={5}
            max={43_200}
            value={form.session_idle_minutes}
            onChange={(value) => typeof value === 'number' && setForm({ ...form, session_idle_minutes: value })}
            disabled={!canChange}
          />
          <NumberInput
            label="Longest a session lasts (hours)"
            description="1 hour to 90 days; 168 = 7 days"
            min={1}
            max={2160}
            value={form.session_max_age_hours}
            onChange={(value) => typeof value === 'number' && setForm({ ...form, session_max_age_hours: value })}
            disabled={!canChange}
          />
        </SimpleGrid>
        {error ? (
          <Text c="red" size="sm" role="alert">
            {error}
          </Text>
        ) : null}
        <Group>
          <Button
            type="submit"
            leftSection={<IconDeviceFloppy size={16} />}
            loading={save.isPending}
            disabled={!canChange || changed.length === 0}
            title={reason}
          >
            Save sign-in settings
          </Button>
          {reason ? (
            <Text size="sm" c="dimmed">
              {reason}
            </Text>
          ) : null}
        </Group>
      </Stack>
    </form>
  );
}

/** The owner's sign-in settings: two-factor for everyone, how long console sessions last. */
export function SignInSection() {
  const settings = useSignInSettings();
  const can = useCan('settings.server');
  return (
    <Section
      id="sign-in"
      title="Sign-in"
      description="Two-factor sign-in for everyone, and how long a console session lasts. Changes apply to sessions already open."
    >
      <QueryView query={settings}>
        {(data) => <SignInForm settings={data} canChange={can.allowed} refusal={can.reason} />}
      </QueryView>
    </Section>
  );
}
