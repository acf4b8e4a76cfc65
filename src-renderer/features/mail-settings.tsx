// Invitation email settings: where mail goes (SMTP or the outbox folder), the sender, the
// templates with a preview, and a test email. PUT /api/mail/settings; the SMTP password is
// write-only (the server only says whether one is set).
import {
  Alert,
  Anchor,
  Badge,
  Button,
  Card,
  Code,
  Collapse,
  Fieldset,
  Group,
  Modal,
  NumberInput,
  PasswordInput,
  Select,
  SimpleGrid,
  Stack,
  Switch,
  Table,
  Tabs,
  Text,
  Textarea,
  TextInput,
  Title,
} from '@mantine/core';
import { useForm } from '@mantine/form';
import { useDisclosure } from '@mantine/hooks';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { IconDeviceFloppy, IconEye, IconMailShare } from '@tabler/icons-react';
import { useEffect, useState } from 'react';
import { admin, AdminApiError, errorMessage } from '../api/client.ts';
import { keys } from '../api/queries.ts';
import type { MailSettings, MailSettingsPut, MailSettingsView } from '../../src-shared/contract/index.ts';
import { notifyError, QueryView } from '../components/common.tsx';
import { isValidEmail } from '../../src-shared/contract/rules.ts';
import { isHttpUrl } from '../lib/settings.ts';
import { Gate, OWNER_SETTINGS_NOTE, RoleNotice, useCan } from '../components/permissions.tsx';

type Form = MailSettings & { smtp_password: string };

function errorsOf(values: Form): Partial<Record<keyof Form, string>> {
  const errors: Partial<Record<keyof Form, string>> = {};
  if (/[\s/@]/.test(values.smtp_host)) errors.smtp_host = 'Just the server name, as in smtp.example.com';
  if (!Number.isInteger(values.smtp_port) || values.smtp_port < 0 || values.smtp_port > 65535)
    errors.smtp_port = '0 to 65535 (0 = the usual port)';
  if (values.mail_from_address && !isValidEmail(values.mail_from_address)) errors.mail_from_address = 'Not a valid email address';
  if (/[\r\n]/.test(values.mail_from_name)) errors.mail_from_name = 'One line';
  if (values.mail_agent_app_url && !isHttpUrl(values.mail_agent_app_url))
    errors.mail_agent_app_url = 'A full http:// or https:// address';
  if (!Number.isInteger(values.smtp_max_connections) || values.smtp_max_connections < 1 || values.smtp_max_connections > 20) {
    errors.smtp_max_connections = '1 to 20';
  }
  return errors;
}

/** The PUT body: the fields that changed; the password only when one was typed. */
export function mailPatch(before: MailSettings, after: Form): MailSettingsPut {
  const patch: Record<string, unknown> = {};
  for (const key of Object.keys(before) as (keyof MailSettings)[]) {
    let value: unknown = after[key];
    if (typeof value === 'string' && !key.endsWith('_template')) value = value.trim();
    if (value !== before[key]) patch[key] = value;
  }
  if (after.smtp_password !== '') patch.smtp_password = after.smtp_password;
  // The keys are those of the mail settings, the values the form's own (of their types).
  return patch as MailSettingsPut;
}

function PreviewModal({
  opened,
  onClose,
  templates,
}: {
  opened: boolean;
  onClose: () => void;
  templates: { subject: string; html: string; text: string } | null;
}) {
  const preview = useQuery({
    queryKey: ['mail', 'preview', templates],
    queryFn: () => admin.mail.preview({ body: templates ?? {} }),
    enabled: opened && templates !== null,
    staleTime: 0,
  });
  return (
    <Modal opened={opened} onClose={onClose} title="Invitation email preview" size="xl">
      <QueryView query={preview}>
        {(data) => (
          <Stack gap="sm" data-testid="mail-preview">
            {!data.ok ? (
              <Alert color="red" variant="light" title="The templates have errors">
                {Object.entries(data.errors).map(([part, errors]) => (
                  <Text size="sm" key={part}>
                    {part}: {(errors ?? []).join('; ')}
                  </Text>
                ))}
              </Alert>
            ) : null}
            <Table verticalSpacing={4} fz="sm">
              <Table.Tbody>
                <Table.Tr>
                  <Table.Th w={80}>From</Table.Th>
                  <Table.Td>{data.from ?? '—'}</Table.Td>
                </Table.Tr>
                <Table.Tr>
                  <Table.Th>To</Table.Th>
                  <Table.Td>{data.to}</Table.Td>
                </Table.Tr>
                <Table.Tr>
                  <Table.Th>Subject</Table.Th>
                  <Table.Td data-testid="mail-preview-subject">{data.subject ?? '—'}</Table.Td>
                </Table.Tr>
              </Table.Tbody>
            </Table>
            <Tabs defaultValue="html">
              <Tabs.List>
                <Tabs.Tab value="html">HTML</Tabs.Tab>
                <Tabs.Tab value="text">Plain text</Tabs.Tab>
              </Tabs.List>
              <Tabs.Panel value="html" pt="sm">
                {data.html !== null ? (
                  // Sandboxed: no scripts, no access to the console; the console's CSP still applies.
                  <iframe
                    title="HTML part of the invitation email"
                    sandbox=""
                    srcDoc={data.html}
                    style={{
                      width: '100%',
                      height: 520,
                      border: '1px solid var(--mantine-color-default-border)',
                      borderRadius: 8,
                      background: '#fff',
                    }}
                  />
                ) : (
                  <Text c="dimmed">Not rendered: the HTML template has errors.</Text>
                )}
              </Tabs.Panel>
              <Tabs.Panel value="text" pt="sm">
                <Code block style={{ whiteSpace: 'pre-wrap' }}>
                  {data.text ?? 'Not rendered: the text template has errors.'}
                </Code>
              </Tabs.Panel>
            </Tabs>
          </Stack>
        )}
      </QueryView>
    </Modal>
  );
}

function TestEmail() {
  const [to, setTo] = useState('');
  const test = useMutation({
    mutationFn: async (address: string) => {
      try {
        return await admin.mail.test({ body: { to: address } });
      } catch (error) {
        // 502: the mail server refused or could not be reached; said in place, not as an error.
        if (error instanceof AdminApiError && error.status === 502) return { ok: false, message: error.message } as const;
        throw error;
      }
    },
    onError: (error) => notifyError('No test email', error),
  });
  const result = test.data;
  return (
    <Stack gap="xs">
      <Group align="flex-end" gap="sm">
        <TextInput
          label="Send a test email to"
          placeholder="you@example.com"
          value={to}
          onChange={(e) => setTo(e.currentTarget.value)}
          error={to && !isValidEmail(to) ? 'Not a valid email address' : null}
          w={300}
        />
        <Gate permission="settings.write">
          <Button
            variant="default"
            leftSection={<IconMailShare size={16} />}
            disabled={!isValidEmail(to)}
            loading={test.isPending}
            onClick={() => test.mutate(to.trim())}
          >
            Send test
          </Button>
        </Gate>
      </Group>
      {result ? (
        <Alert color={result.ok ? 'teal' : 'red'} variant="light" p="sm" data-testid="mail-test-result">
          {result.ok
            ? result.via === 'outbox'
              ? `Written to the outbox: ${result.file}`
              : `Sent. The server said: ${result.response ?? 'OK'}`
            : `Failed: ${result.message}`}
        </Alert>
      ) : null}
    </Stack>
  );
}

function MailForm({ view }: { view: MailSettingsView }) {
  const client = useQueryClient();
  const initial: Form = { ...view.settings, smtp_password: '' };
  const form = useForm<Form>({ mode: 'controlled', initialValues: initial, validate: errorsOf, validateInputOnChange: true });
  const [preview, setPreview] = useState<{ subject: string; html: string; text: string } | null>(null);
  const [previewOpen, previewControls] = useDisclosure(false);
  const [templatesOpen, templatesControls] = useDisclosure(false);
  const [saveError, setSaveError] = useState<string | null>(null);
  const mayWrite = useCan('settings.write').allowed;
  const mayServer = useCan('settings.server').allowed;

  useEffect(() => {
    if (!form.isDirty()) {
      form.setInitialValues({ ...view.settings, smtp_password: '' });
      form.setValues({ ...view.settings, smtp_password: '' });
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps -- only a new view from the server resets the form (the form object is stable)
  }, [view]);

  const save = useMutation({
    mutationFn: (patch: MailSettingsPut) => admin.mail.saveSettings({ body: patch }),
    onSuccess: (updated) => {
      client.setQueryData(keys.mailSettings, updated);
      void client.invalidateQueries({ queryKey: keys.settings });
      form.setInitialValues({ ...updated.settings, smtp_password: '' });
      form.setValues({ ...updated.settings, smtp_password: '' });
      setSaveError(null);
    },
    onError: (error) => setSaveError(errorMessage(error)),
  });
  const removePassword = useMutation({
    mutationFn: () => admin.mail.saveSettings({ body: { smtp_password: null } }),
    onSuccess: (updated) => client.setQueryData(keys.mailSettings, updated),
    onError: (error) => notifyError('Password not removed', error),
  });

  const values = form.getValues();
  const template = (part: 'subject' | 'html' | 'text') =>
    values[`mail_${part}_template` as const] || view.default_templates[part];
  const override = view.overridden_by_command_line;

  return (
    <form
      noValidate
      onSubmit={form.onSubmit((next) => {
        const patch = mailPatch(view.settings, next);
        if (Object.keys(patch).length) save.mutate(patch);
      })}
    >
      <Stack gap="md">
        <Alert
          color={view.error ? 'red' : view.effective?.kind === 'smtp' ? 'teal' : 'gray'}
          variant="light"
          p="sm"
          data-testid="mail-transport"
        >
          {view.error
            ? view.error
            : view.effective
              ? `Invitation emails: ${view.effective.summary}. From ${view.effective.from}.`
              : 'Not configured.'}
        </Alert>
        {override.smtp ? (
          <Alert color="orange" variant="light" p="sm">
            The server was started with <Code>--smtp-url {override.smtp_url}</Code>: it takes precedence over the SMTP settings
            below until a restart without it.
          </Alert>
        ) : null}
        <RoleNotice permission="settings.write" />
        {mayWrite ? <RoleNotice permission="settings.server">{OWNER_SETTINGS_NOTE}</RoleNotice> : null}
        <Fieldset variant="unstyled" disabled={!mayServer} data-testid="smtp-fieldset">
          <Stack gap="md">
            <Title order={5}>SMTP server</Title>
            <Text size="xs" c="dimmed" mt={-10}>
              Empty host: no email leaves this machine; each message is written to {view.outbox_dir} as a .eml file.
            </Text>
            <SimpleGrid cols={{ base: 1, sm: 3 }}>
              <TextInput label="Host" placeholder="smtp.example.com" {...form.getInputProps('smtp_host')} />
              <NumberInput
                label="Port"
                description="0 = 465 for TLS, else 587"
                min={0}
                max={65535}
                allowDecimal={false}
                {...form.getInputProps('smtp_port')}
              />
              <Select
                label="Security"
                data={[
                  { value: 'auto', label: 'STARTTLS when offered' },
                  { value: 'starttls', label: 'STARTTLS required' },
                  { value: 'tls', label: 'TLS (smtps)' },
                  { value: 'none', label: 'None' },
                ]}
                allowDeselect={false}
                {...form.getInputProps('smtp_security')}
              />
              <TextInput
                label="User"
                placeholder="Empty: no authentication"
                autoComplete="off"
                {...form.getInputProps('smtp_user')}
              />
              <PasswordInput
                label="Password"
                placeholder={view.smtp_password_set ? '•••••••• (set; type to replace)' : 'Not set'}
                autoComplete="new-password"
                {...form.getInputProps('smtp_password')}
                description={
                  view.smtp_password_set ? (
                    <Anchor component="button" type="button" size="xs" onClick={() => removePassword.mutate()}>
                      Remove the saved password
                    </Anchor>
                  ) : (
                    'Kept in the data folder, readable only by you; never shown again'
                  )
                }
              />
              <NumberInput
                label="Connections"
                description="Messages in flight at once"
                min={1}
                max={20}
                allowDecimal={false}
                {...form.getInputProps('smtp_max_connections')}
              />
            </SimpleGrid>
            <Switch
              label="Check the server's certificate"
              description="Turn off only for a server with a self-signed certificate you trust."
              {...form.getInputProps('smtp_reject_unauthorized', { type: 'checkbox' })}
            />
          </Stack>
        </Fieldset>
        <Title order={5}>Sender and content</Title>
        <Fieldset variant="unstyled" disabled={!mayWrite}>
          <Stack gap="md">
            <SimpleGrid cols={{ base: 1, sm: 2 }}>
              <TextInput
                label="From address"
                placeholder="Empty: the SMTP user, or no-reply@this host"
                {...form.getInputProps('mail_from_address')}
              />
              <TextInput label="From name" {...form.getInputProps('mail_from_name')} />
              <TextInput
                label="Who invites"
                placeholder="Empty: the helpdesk name, else “Your IT team”"
                {...form.getInputProps('mail_inviter')}
              />
              <TextInput
                label="Where to get the agent app"
                placeholder="https://play.google.com/store/apps/…"
                {...form.getInputProps('mail_agent_app_url')}
              />
            </SimpleGrid>
            <Switch
              label="Email new invitations by default"
              description="The invitation dialogs start with “email it” checked."
              {...form.getInputProps('mail_send_on_create', { type: 'checkbox' })}
            />
          </Stack>
        </Fieldset>
        <Group gap="sm">
          <Button variant="subtle" size="compact-sm" onClick={templatesControls.toggle}>
            {templatesOpen ? 'Hide the templates' : 'Edit the templates'}
          </Button>
          <Button
            variant="default"
            size="compact-sm"
            leftSection={<IconEye size={14} />}
            onClick={() => {
              setPreview({ subject: template('subject'), html: template('html'), text: template('text') });
              previewControls.open();
            }}
          >
            Preview the email
          </Button>
          {values.mail_subject_template || values.mail_html_template || values.mail_text_template ? (
            <Badge variant="light">custom templates</Badge>
          ) : null}
        </Group>
        <Collapse expanded={templatesOpen}>
          <Fieldset variant="unstyled" disabled={!mayWrite}>
            <Stack gap="sm">
              <Text size="xs" c="dimmed">
                Empty = the built-in template. <Code>{'{{name}}'}</Code> inserts a value (escaped);{' '}
                <Code>{'{{#name}}…{{/name}}'}</Code> keeps its content when the value is not empty.
              </Text>
              <TextInput
                label="Subject"
                placeholder={view.default_templates.subject}
                {...form.getInputProps('mail_subject_template')}
              />
              <Textarea
                label="HTML"
                placeholder="(built-in)"
                autosize
                minRows={4}
                maxRows={14}
                styles={{ input: { fontFamily: 'var(--mantine-font-family-monospace)', fontSize: 12 } }}
                {...form.getInputProps('mail_html_template')}
              />
              <Textarea
                label="Plain text"
                placeholder={view.default_templates.text}
                autosize
                minRows={4}
                maxRows={14}
                styles={{ input: { fontFamily: 'var(--mantine-font-family-monospace)', fontSize: 12 } }}
                {...form.getInputProps('mail_text_template')}
              />
              <Group gap="xs">
                <Button
                  size="compact-xs"
                  variant="subtle"
                  onClick={() =>
                    form.setValues({
                      mail_html_template: view.default_templates.html,
                      mail_text_template: view.default_templates.text,
                      mail_subject_template: view.default_templates.subject,
                    })
                  }
                >
                  Start from the built-in templates
                </Button>
              </Group>
              <Table fz="xs" verticalSpacing={2} withTableBorder>
                <Table.Tbody>
                  {Object.entries(view.placeholders).map(([name, description]) => (
                    <Table.Tr key={name}>
                      <Table.Td className="mono" w={160}>{`{{${name}}}`}</Table.Td>
                      <Table.Td>{description}</Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            </Stack>
          </Fieldset>
        </Collapse>
        {saveError ? (
          <Alert color="red" variant="light" p="sm">
            {saveError}
          </Alert>
        ) : null}
        <Group justify="space-between">
          <Text size="sm" c="dimmed">
            {form.isDirty()
              ? 'You have unsaved changes.'
              : save.isSuccess
                ? 'Saved; applies to the next email sent.'
                : 'Applies to the next email sent, no restart needed.'}
          </Text>
          <Group gap="sm">
            <Button variant="default" disabled={!form.isDirty()} onClick={() => form.reset()}>
              Discard
            </Button>
            <Gate permission="settings.write">
              <Button
                type="submit"
                leftSection={<IconDeviceFloppy size={16} />}
                disabled={!form.isDirty()}
                loading={save.isPending}
              >
                Save email settings
              </Button>
            </Gate>
          </Group>
        </Group>
        <TestEmail />
      </Stack>
      <PreviewModal opened={previewOpen} onClose={previewControls.close} templates={preview} />
    </form>
  );
}

/** Invitation email settings: SMTP, sender, templates with preview, test email. */
export function MailSettingsSection() {
  const view = useQuery({
    queryKey: keys.mailSettings,
    queryFn: ({ signal }) => admin.mail.settings({ signal }),
    retry: false,
  });
  // A server without the mail capability: no section.
  if (view.isError && view.error instanceof AdminApiError && view.error.status === 404) return null;
  return (
    <Card withBorder radius="md" p="lg" id="email">
      <Title order={4}>Invitation email</Title>
      <Text size="sm" c="dimmed" mt={2} mb="md">
        How invitations reach people by email.
      </Text>
      <QueryView query={view}>{(data) => <MailForm view={data} />}</QueryView>
    </Card>
  );
}
