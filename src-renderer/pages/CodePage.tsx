import { Alert, Anchor, Badge, Box, Breadcrumbs, Button, Card, Grid, Group, Modal, Overlay, SegmentedControl, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { IconDownload, IconPlayerPlay, IconPrinter } from '@tabler/icons-react';
import { useState, type FormEvent } from 'react';
import { ApiRequestError } from '../api/client.ts';
import { useCode, useSimulateWithCode, usesText, type CodeDetail, type CodeLogEntry } from '../api/codes.ts';
import type { SimulateResult } from '../api/types.ts';
import { Link } from '../app/router.tsx';
import { EmptyState, ErrorState, LoadingState, notifyError, notifySuccess, RelativeTime } from '../components/common.tsx';
import { DecideButtons, EnrollStatusBadge } from '../features/approval.tsx';
import { formatDateTime } from '../lib/format.ts';
import { shortFingerprint } from '../lib/hash.ts';
import { CodeActions, CodeStatusBadge } from './Codes.tsx';
import { LinkRow, SimulationResult } from './InvitationPage.tsx';

export function CodePage({ id }: { id: number }) {
  const code = useCode(id);
  if (code.isPending) return <LoadingState />;
  if (code.isError) {
    if (code.error instanceof ApiRequestError && code.error.status === 404) {
      return <EmptyState title="This enrollment code does not exist" action={<Button component={Link} to="/codes" variant="light">Back to enrollment codes</Button>} />;
    }
    return <ErrorState error={code.error} onRetry={() => void code.refetch()} />;
  }
  return <CodeView code={code.data} />;
}

function QrCard({ code }: { code: CodeDetail }) {
  const version = shortFingerprint(code.deeplink);
  const why = { active: '', expired: 'expired', used_up: 'used up', revoked: 'revoked' }[code.status];
  return (
    <Card withBorder radius="md" p="lg">
      <Box pos="relative" className="qr-frame" maw={420} mx="auto">
        <img src={`/api/codes/${code.id}/qr.svg?v=${version}`} alt={`QR code of the enrollment code ${code.name}`} data-testid="code-qr" width={396} height={396} />
        {why ? (
          <Overlay color="#fff" backgroundOpacity={0.82} blur={1} center radius="md">
            <Badge size="xl" color="gray" variant="filled">
              Code {why}
            </Badge>
          </Overlay>
        ) : null}
      </Box>
      <Text ta="center" size="sm" c="dimmed" mt="sm">
        Anyone allowed scans it with their phone and enrolls with their own email address.
      </Text>
      <Group justify="center" mt="md" gap="sm">
        <Button component="a" href={`/api/codes/${code.id}/qr.png?size=1024&v=${version}`} download={`enrollment-code-${code.id}-qr.png`} variant="default" leftSection={<IconDownload size={16} />}>
          PNG
        </Button>
        <Button component="a" href={`/api/codes/${code.id}/qr.svg?v=${version}`} download={`enrollment-code-${code.id}-qr.svg`} variant="default" leftSection={<IconDownload size={16} />}>
          SVG
        </Button>
        <Button component={Link} to={`/codes/${code.id}/poster`} variant="default" leftSection={<IconPrinter size={16} />}>
          Poster
        </Button>
      </Group>
    </Card>
  );
}

function Details({ code }: { code: CodeDetail }) {
  const rows: [string, React.ReactNode][] = [
    ['Fleet', code.fleet ?? '—'],
    ['Domains', code.domains.length ? code.domains.map((d) => `@${d}`).join(', ') : 'any address'],
    ['Uses', <span data-testid="code-detail-uses">{usesText(code)}</span>],
    ['Approval', code.approval === 'manual' ? 'An admin approves each device' : 'Automatic'],
    ['Created', formatDateTime(code.created_at)],
    ['Expires', code.expires_at ? <>{formatDateTime(code.expires_at)} (<RelativeTime iso={code.expires_at} />)</> : 'never'],
  ];
  if (code.rotated_at) rows.push(['Rotated', formatDateTime(code.rotated_at)]);
  if (code.revoked_at) rows.push(['Revoked', formatDateTime(code.revoked_at)]);
  return (
    <Table verticalSpacing={6}>
      <Table.Tbody>
        {rows.map(([label, value]) => (
          <Table.Tr key={label}>
            <Table.Th w={110} fw={500} c="dimmed">
              {label}
            </Table.Th>
            <Table.Td>{value}</Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}

function Uses({ entries }: { entries: CodeLogEntry[] }) {
  const used = entries.filter((entry) => entry.outcome === 'used');
  return (
    <Card withBorder radius="md" p="md">
      <Title order={5} mb="xs">
        Uses {used.length ? <Badge variant="light" ml={4}>{used.length}</Badge> : null}
      </Title>
      {used.length === 0 ? (
        <Text size="sm" c="dimmed">
          No device has enrolled with this code yet.
        </Text>
      ) : (
        <Table.ScrollContainer minWidth={560}>
          <Table verticalSpacing={4} fz="sm" striped data-testid="code-uses-log">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>When</Table.Th>
                <Table.Th>Person</Table.Th>
                <Table.Th>Device</Table.Th>
                <Table.Th>Status</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {used.map((entry) => (
                <Table.Tr key={entry.id} data-testid="code-use-row" data-email={entry.email ?? ''}>
                  <Table.Td style={{ whiteSpace: 'nowrap' }}>
                    <RelativeTime iso={entry.at} />
                  </Table.Td>
                  <Table.Td style={{ wordBreak: 'break-all' }}>{entry.email}</Table.Td>
                  <Table.Td className="mono">
                    {entry.agent_id ? <Anchor component={Link} to={`/devices?agent=${entry.agent_id}`}>{entry.agent_name}</Anchor> : (entry.serial ?? entry.uuid)}
                  </Table.Td>
                  <Table.Td>
                    <Group gap={6} wrap="nowrap">
                      <EnrollStatusBadge status={entry.enroll_status} />
                      {entry.enroll_status === 'pending_approval' && entry.agent_id ? <DecideButtons agentId={entry.agent_id} /> : null}
                    </Group>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
    </Card>
  );
}

function Refusals({ entries }: { entries: CodeLogEntry[] }) {
  const refused = entries.filter((entry) => entry.outcome === 'refused');
  return (
    <Card withBorder radius="md" p="md">
      <Title order={5} mb="xs">
        Refused attempts {refused.length ? <Badge color="red" variant="light" ml={4}>{refused.length}</Badge> : null}
      </Title>
      {refused.length === 0 ? (
        <Text size="sm" c="dimmed">
          No device has been refused with this code.
        </Text>
      ) : (
        <Table.ScrollContainer minWidth={560}>
          <Table verticalSpacing={4} fz="sm" striped data-testid="code-refused-log">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>When</Table.Th>
                <Table.Th>Email given</Table.Th>
                <Table.Th>Reason</Table.Th>
                <Table.Th>Device</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {refused.map((entry) => (
                <Table.Tr key={entry.id} data-testid="code-refused-row">
                  <Table.Td style={{ whiteSpace: 'nowrap' }}>
                    <RelativeTime iso={entry.at} />
                  </Table.Td>
                  <Table.Td style={{ wordBreak: 'break-all' }}>{entry.email ?? '—'}</Table.Td>
                  <Table.Td>{entry.message}</Table.Td>
                  <Table.Td className="mono">{entry.serial ?? entry.uuid ?? '—'}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
    </Card>
  );
}

/** A made-up person in an allowed domain; the admin may type any address (a refused one shows the refusal). */
function suggestedEmail(domains: string[]): string {
  const domain = domains[Math.floor(Math.random() * domains.length)] ?? 'example.com';
  return `person-${Math.random().toString(16).slice(2, 8)}@${domain}`;
}

function SimulateButton({ code }: { code: CodeDetail }) {
  const simulate = useSimulateWithCode();
  const [opened, setOpened] = useState(false);
  const [email, setEmail] = useState('');
  const [type, setType] = useState<'android' | 'apple'>('android');
  const [result, setResult] = useState<SimulateResult | null>(null);
  const open = () => {
    setEmail(suggestedEmail(code.domains));
    setOpened(true);
  };
  const submit = (event: FormEvent) => {
    event.preventDefault();
    simulate.mutate(
      { id: code.id, email: email.trim(), type },
      {
        onSuccess: (outcome) => {
          setOpened(false);
          setResult(outcome);
          if (outcome.ok) notifySuccess(`${outcome.email} enrolled a simulated ${outcome.type} device`);
        },
        onError: (error) => notifyError('The simulator could not run', error),
      },
    );
  };
  return (
    <>
      <Button leftSection={<IconPlayerPlay size={16} />} onClick={open} title="Runs the device simulator with this code, as a person's phone would">
        Simulate a device
      </Button>
      <Modal opened={opened} onClose={() => setOpened(false)} title="Simulate a person enrolling a device">
        <form onSubmit={submit}>
          <Stack>
            <TextInput
              label="The person's email address"
              description={code.domains.length ? `This code allows ${code.domains.map((d) => `@${d}`).join(', ')}; another domain shows the refusal.` : 'This code allows any address.'}
              value={email}
              onChange={(e) => setEmail(e.currentTarget.value)}
              required
              data-testid="simulate-email"
            />
            <SegmentedControl aria-label="Device type" data={[{ value: 'android', label: 'Android' }, { value: 'apple', label: 'Apple' }]} value={type} onChange={(v) => setType(v as 'android' | 'apple')} />
            <Group justify="flex-end">
              <Button variant="default" onClick={() => setOpened(false)}>
                Cancel
              </Button>
              <Button type="submit" loading={simulate.isPending} disabled={!email.trim()}>
                Enroll
              </Button>
            </Group>
          </Stack>
        </form>
      </Modal>
      <SimulationResult result={result} onClose={() => setResult(null)} />
    </>
  );
}

function CodeView({ code }: { code: CodeDetail }) {
  return (
    <>
      <title>{`${code.name} · Enrollment codes · MDM Console`}</title>
      <Breadcrumbs mb="xs">
        <Anchor component={Link} to="/codes" size="sm">
          Enrollment codes
        </Anchor>
        <Text size="sm">{code.name}</Text>
      </Breadcrumbs>
      <Group justify="space-between" align="flex-start" mb="lg" wrap="wrap">
        <Group gap="sm">
          <Title order={1} size="h2">{code.name}</Title>
          <CodeStatusBadge code={code} size="lg" />
        </Group>
        <Group gap="sm">
          <SimulateButton code={code} />
          <CodeActions code={code} />
        </Group>
      </Group>
      {code.rotated_at ? (
        <Alert color="blue" variant="light" mb="md">
          Rotated {formatDateTime(code.rotated_at)}: copies printed or shared before then no longer work.
        </Alert>
      ) : null}
      <Grid gap="lg">
        <Grid.Col span={{ base: 12, md: 5 }}>
          <QrCard code={code} />
        </Grid.Col>
        <Grid.Col span={{ base: 12, md: 7 }}>
          <Stack>
            <Card withBorder radius="md" p="md">
              <Details code={code} />
            </Card>
            <Card withBorder radius="md" p="md">
              <Stack gap="md">
                <LinkRow label="Deeplink" value={code.deeplink} testId="code-deeplink" hint="The enrollment page the QR code opens; share it with people who cannot scan." />
                <LinkRow label="App link" value={code.app_link} testId="code-app-link" hint="Opens the agent app directly on a phone where it is installed." />
              </Stack>
            </Card>
          </Stack>
        </Grid.Col>
      </Grid>
      <Stack mt="lg">
        <Uses entries={code.log} />
        <Refusals entries={code.log} />
      </Stack>
    </>
  );
}
