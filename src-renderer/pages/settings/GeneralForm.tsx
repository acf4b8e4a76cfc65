import {
  Fieldset,
  Alert,
  Button,
  Card,
  Code,
  Group,
  NumberInput,
  PasswordInput,
  Radio,
  Select,
  SimpleGrid,
  Stack,
  Switch,
  Table,
  Text,
  TextInput,
} from '@mantine/core';
import { useForm } from '@mantine/form';
import { IconAlertTriangle, IconDeviceFloppy } from '@tabler/icons-react';
import { useEffect, useState } from 'react';
import { useSaveSettings } from '../../api/queries.ts';
import type { ServerStatus, Settings } from '../../../src-shared/contract/index.ts';
import { notifyError } from '../../components/common.tsx';
import { isLoopback } from '../../../src-shared/contract/rules.ts';
import { appliedNote, pickGeneral, settingsErrors, settingsPatch, type GeneralSettings } from '../../lib/settings.ts';
import { UnreachableWarning } from '../../features/reachability.tsx';

import { Section } from './Section.tsx';
import { Gate, OWNER_SETTINGS_NOTE, RoleNotice, useCan } from '../../components/permissions.tsx';

const CUSTOM = '__custom__';

function portOf(url: string): string {
  try {
    const parsed = new URL(url);
    return parsed.port || (parsed.protocol === 'https:' ? '443' : '80');
  } catch {
    return '—';
  }
}

/** How devices reach this server, the helpdesk and what invitations carry: one form, saved at once. */
export function GeneralForm({ settings, status }: { settings: Settings; status: ServerStatus }) {
  const save = useSaveSettings();
  const mayWrite = useCan('settings.write').allowed;
  const mayServer = useCan('settings.server').allowed;
  const initial = pickGeneral(settings);
  const form = useForm<GeneralSettings>({
    mode: 'controlled',
    initialValues: initial,
    validate: (values) => settingsErrors(values),
    validateInputOnChange: true,
  });
  const [saved, setSaved] = useState<{ note: string; hostIgnored: string | null } | null>(null);

  // Another window (or the CLI) changed the settings: take them unless this form has edits.
  useEffect(() => {
    if (!form.isDirty()) {
      form.setInitialValues(pickGeneral(settings));
      form.setValues(pickGeneral(settings));
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps -- only new settings from the server reset the form (the form object is stable)
  }, [settings]);

  const values = form.getValues();
  const hosts = [
    ...new Set([...status.lan_addresses, status.public_host, ...(values.public_host ? [values.public_host] : []), '127.0.0.1']),
  ];
  const [hostChoice, setHostChoice] = useState<string>(
    values.public_host === '' ? '' : hosts.includes(values.public_host) ? values.public_host : CUSTOM,
  );
  const deeplinkMode =
    values.deeplink_base_url === '' && form.getInputProps('deeplink_base_url').error === undefined ? 'self' : 'own';
  const [ownDeeplink, setOwnDeeplink] = useState(settings.deeplink_base_url !== '');

  const submit = form.onSubmit((next) => {
    const patch = settingsPatch(pickGeneral(settings), next);
    if (Object.keys(patch).length === 0) return;
    save.mutate(patch as Partial<Settings>, {
      onSuccess: (updated) => {
        form.setInitialValues(pickGeneral(updated));
        form.setValues(pickGeneral(updated));
        const wanted = updated.public_host;
        setSaved({ note: appliedNote(patch), hostIgnored: wanted && 'public_host' in patch ? wanted : null });
      },
      onError: (error) => notifyError('The settings were not saved', error),
    });
  });

  // The server may have been started with --public-host, which wins over the setting.
  const hostIgnored = saved?.hostIgnored && status.public_host !== saved.hostIgnored ? saved.hostIgnored : null;

  return (
    <form onSubmit={submit} noValidate>
      <Fieldset variant="unstyled" disabled={!mayWrite} data-testid="settings-fieldset">
        <Stack gap="lg">
          <RoleNotice permission="settings.write" />
          {mayWrite ? <RoleNotice permission="settings.server">{OWNER_SETTINGS_NOTE}</RoleNotice> : null}
          <Section
            title="Network"
            description="Phones reach this server at the public host: it goes into every QR code, deeplink and agent record."
          >
            <Fieldset variant="unstyled" disabled={!mayServer}>
              <Stack>
                <SimpleGrid cols={{ base: 1, sm: 2 }}>
                  <Select
                    label="Public host"
                    description="An address of this machine that phones on the network can reach."
                    data={[
                      { value: '', label: `Automatic (in use now: ${status.public_host})` },
                      ...hosts.map((host) => ({ value: host, label: isLoopback(host) ? `${host} — this machine only` : host })),
                      { value: CUSTOM, label: 'Another name or address…' },
                    ]}
                    value={hostChoice}
                    onChange={(value) => {
                      const choice = value ?? '';
                      setHostChoice(choice);
                      if (choice !== CUSTOM) form.setFieldValue('public_host', choice);
                    }}
                    allowDeselect={false}
                    data-testid="public-host-select"
                  />
                  {hostChoice === CUSTOM ? (
                    <TextInput
                      label="Host name or address"
                      placeholder="mdm.example.lan"
                      {...form.getInputProps('public_host')}
                      data-testid="public-host-input"
                    />
                  ) : null}
                </SimpleGrid>
                {/* In force now: the warning with its one-click fix; about to be chosen: a note. */}
                <UnreachableWarning what="Every QR code, deeplink and invitation email" />
                {isLoopback(values.public_host || status.public_host) && !isLoopback(status.public_host) ? (
                  <Alert color="orange" variant="light" icon={<IconAlertTriangle size={18} />} p="sm">
                    A loopback address works for the simulator on this machine only: phones cannot reach it.
                  </Alert>
                ) : null}
                {hostIgnored ? (
                  <Alert color="orange" variant="light" p="sm">
                    Saved, but this server was started with <Code>--public-host {status.public_host}</Code>, which takes
                    precedence: {hostIgnored} applies after a restart without that option.
                  </Alert>
                ) : null}
                <Switch
                  label="Send devices to the MQTT TLS port"
                  description={`Agent records point devices at port ${status.mqtt_tls_port} (TLS) instead of ${status.mqtt_port}.`}
                  {...form.getInputProps('mqtt_tls', { type: 'checkbox' })}
                />
                <div>
                  <Text size="sm" fw={500}>
                    Ports
                  </Text>
                  <Text size="xs" c="dimmed" mb={6}>
                    Chosen when the server starts; changing one needs a restart (
                    <Code>npm run serve -- --port P --admin-port A --mqtt-port M --mqtt-tls-port T</Code>).
                  </Text>
                  <Table withTableBorder verticalSpacing={4} fz="sm" w="auto" data-testid="ports">
                    <Table.Tbody>
                      <Table.Tr>
                        <Table.Td>Agent API and deeplink page</Table.Td>
                        <Table.Td className="mono">{portOf(status.api_url)}</Table.Td>
                      </Table.Tr>
                      <Table.Tr>
                        <Table.Td>Console and admin API (this machine only)</Table.Td>
                        <Table.Td className="mono">{portOf(status.admin_url)}</Table.Td>
                      </Table.Tr>
                      <Table.Tr>
                        <Table.Td>MQTT broker</Table.Td>
                        <Table.Td className="mono">{status.mqtt_port}</Table.Td>
                      </Table.Tr>
                      <Table.Tr>
                        <Table.Td>MQTT broker, TLS</Table.Td>
                        <Table.Td className="mono">{status.mqtt_tls_port}</Table.Td>
                      </Table.Tr>
                    </Table.Tbody>
                  </Table>
                </div>
              </Stack>
            </Fieldset>
          </Section>

          <Section title="Deeplinks" description="Where the QR code sends a phone, and the app link that opens the agent.">
            <Stack>
              <Fieldset variant="unstyled" disabled={!mayServer}>
                <Radio.Group
                  label="Deeplink page"
                  value={ownDeeplink ? 'own' : deeplinkMode}
                  onChange={(value) => {
                    setOwnDeeplink(value === 'own');
                    if (value === 'self') form.setFieldValue('deeplink_base_url', '');
                  }}
                >
                  <Stack gap={6} mt={6}>
                    <Radio value="self" label={`This backend (${status.api_url.replace(/\/api$/, '')}/deeplink/)`} />
                    <Radio value="own" label="Our organization's own deeplink service" />
                  </Stack>
                </Radio.Group>
                {ownDeeplink ? (
                  <TextInput
                    label="Deeplink service base URL"
                    description="The page is opened as <base>/deeplink/?data=…"
                    placeholder="https://enroll.example.com"
                    {...form.getInputProps('deeplink_base_url')}
                  />
                ) : null}
              </Fieldset>
              <SimpleGrid cols={{ base: 1, sm: 2 }}>
                <Select
                  label="Agent app"
                  description="Which app on the phones reads the codes: the encoding and app link they carry"
                  data={[
                    { value: 'spec', label: "The spec's MDM agent" },
                    { value: 'flyve', label: 'Flyve MDM agent (Android/iOS)' },
                  ]}
                  allowDeselect={false}
                  {...form.getInputProps('agent_app')}
                  data-testid="agent-app"
                />
                <TextInput
                  label="App link scheme"
                  description={
                    values.agent_app === 'flyve'
                      ? 'The Flyve agents register flyve://register?data=… (this scheme is not used meanwhile)'
                      : `The phone page's button opens ${values.app_link_scheme || 'scheme'}://register?data=…`
                  }
                  {...form.getInputProps('app_link_scheme')}
                  data-testid="app-link-scheme"
                />
              </SimpleGrid>
            </Stack>
          </Section>

          <Section id="helpdesk" title="Helpdesk" description="Shown to people on their device and on the printed cards.">
            <SimpleGrid cols={{ base: 1, sm: 2 }}>
              <TextInput
                label="Name"
                placeholder="IT helpdesk"
                {...form.getInputProps('helpdesk_name')}
                data-testid="helpdesk-name"
              />
              <TextInput
                label="Phone"
                placeholder="+1 555 0100"
                {...form.getInputProps('helpdesk_phone')}
                data-testid="helpdesk-phone"
              />
              <TextInput
                label="Email"
                placeholder="help@example.com"
                {...form.getInputProps('helpdesk_email')}
                data-testid="helpdesk-email"
              />
              <TextInput label="Website" placeholder="https://help.example.com" {...form.getInputProps('helpdesk_website')} />
            </SimpleGrid>
          </Section>

          <Section title="Invitations">
            <NumberInput
              label="Default lifetime (days)"
              description="How long a new invitation can be used, unless chosen when it is created. 1 to 180."
              min={1}
              max={180}
              allowDecimal={false}
              w={300}
              {...form.getInputProps('invitation_lifetime_days')}
              data-testid="lifetime"
            />
          </Section>

          <Section title="Android bug collector" description="Where Android agents send crash reports (optional).">
            <Fieldset variant="unstyled" disabled={!mayServer}>
              <SimpleGrid cols={{ base: 1, sm: 3 }}>
                <TextInput
                  label="URL"
                  placeholder="https://bugs.example.com"
                  {...form.getInputProps('android_bugcollector_url')}
                />
                <TextInput label="Login" {...form.getInputProps('android_bugcollector_login')} autoComplete="off" />
                <PasswordInput
                  label="Password"
                  {...form.getInputProps('android_bugcollector_passwd')}
                  autoComplete="new-password"
                />
              </SimpleGrid>
            </Fieldset>
          </Section>

          {/* Follows the view while there are unsaved changes, so Save is always at hand. */}
          <Card
            withBorder
            radius="md"
            p="md"
            pos={form.isDirty() ? 'sticky' : 'static'}
            bottom={12}
            style={{ zIndex: 5 }}
            shadow={form.isDirty() ? 'md' : undefined}
          >
            <Group justify="space-between">
              <Text size="sm" c={saved && !form.isDirty() ? 'teal' : 'dimmed'} data-testid="settings-note">
                {form.isDirty() ? 'You have unsaved changes.' : saved ? saved.note : 'Changes apply as soon as they are saved.'}
              </Text>
              <Group gap="sm">
                <Button
                  variant="default"
                  disabled={!form.isDirty()}
                  onClick={() => {
                    form.reset();
                    setHostChoice(
                      initial.public_host === '' ? '' : hosts.includes(initial.public_host) ? initial.public_host : CUSTOM,
                    );
                  }}
                >
                  Discard
                </Button>
                <Gate permission="settings.write">
                  <Button
                    type="submit"
                    leftSection={<IconDeviceFloppy size={16} />}
                    disabled={!form.isDirty()}
                    loading={save.isPending}
                  >
                    Save changes
                  </Button>
                </Gate>
              </Group>
            </Group>
          </Card>
        </Stack>
      </Fieldset>
    </form>
  );
}
