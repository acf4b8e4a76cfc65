import {
  Alert,
  Anchor,
  Breadcrumbs,
  Button,
  Card,
  Grid,
  Group,
  Modal,
  SegmentedControl,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { IconPlayerPlay, IconPrinter } from '@tabler/icons-react';
import { useState, type FormEvent } from 'react';
import { AdminApiError } from '../api/client.ts';
import { useCode, useSimulateWithCode, usesText } from '../api/codes.ts';
import type { CodeDetail, CodeLogEntry } from '../../src-shared/contract/index.ts';
import type { SimulateResult } from '../../src-shared/contract/index.ts';
import { Link } from '../lib/router.tsx';
import { EmptyState, ErrorState, LoadingState, notifyError, notifySuccess, RelativeTime } from '../components/common.tsx';
import { DecideButtons, EnrollStatusBadge } from '../features/approval.tsx';
import { DetailsTable, LinksCard, LogCard, QrCard, SimulationResult } from '../features/enrollment-page.tsx';
import { formatDateTime } from '../lib/format.ts';
import { shortFingerprint } from '../lib/hash.ts';
import { CodeActions, CodeStatusBadge } from './Codes.tsx';
import { Gate } from '../components/permissions.tsx';
import { ExportMenu } from '../components/export-menu.tsx';

export function CodePage({ id }: { id: number }) {
  const code = useCode(id);
  if (code.isPending) return <LoadingState />;
  if (code.isError) {
    if (code.error instanceof AdminApiError && code.error.status === 404) {
      return (
        <EmptyState
          title="This enrollment code does not exist"
          action={
            <Button component={Link} to="/codes" variant="light">
              Back to enrollment codes
            </Button>
          }
        />
      );
    }
    return <ErrorState error={code.error} onRetry={() => void code.refetch()} />;
  }
  return <CodeView code={code.data} />;
}

function CodeQrCard({ code }: { code: CodeDetail }) {
  const why = { active: '', expired: 'expired', used_up: 'used up', revoked: 'revoked' }[code.status];
  return (
    <QrCard
      apiPath={`/api/codes/${code.id}`}
      version={shortFingerprint(code.deeplink)}
      alt={`QR code of the enrollment code ${code.name}`}
      testId="code-qr"
      downloadName={`enrollment-code-${code.id}`}
      blockedReason={why}
      hint="Anyone allowed scans it with their phone and enrolls with their own email address."
      extraAction={
        <Button component={Link} to={`/codes/${code.id}/poster`} variant="default" leftSection={<IconPrinter size={16} />}>
          Poster
        </Button>
      }
    />
  );
}

function Details({ code }: { code: CodeDetail }) {
  const rows: [string, React.ReactNode][] = [
    ['Fleet', code.fleet ?? '—'],
    ['Domains', code.domains.length ? code.domains.map((d) => `@${d}`).join(', ') : 'any address'],
    ['Uses', <span data-testid="code-detail-uses">{usesText(code)}</span>],
    ['Approval', code.approval === 'manual' ? 'An admin approves each device' : 'Automatic'],
    ['Created', formatDateTime(code.created_at)],
    [
      'Expires',
      code.expires_at ? (
        <>
          {formatDateTime(code.expires_at)} (<RelativeTime iso={code.expires_at} />)
        </>
      ) : (
        'never'
      ),
    ],
  ];
  if (code.rotated_at) rows.push(['Rotated', formatDateTime(code.rotated_at)]);
  if (code.revoked_at) rows.push(['Revoked', formatDateTime(code.revoked_at)]);
  return <DetailsTable rows={rows} />;
}

function Uses({ entries }: { entries: CodeLogEntry[] }) {
  const used = entries.filter((entry) => entry.outcome === 'used');
  return (
    <LogCard
      title="Uses"
      count={used.length}
      empty="No device has enrolled with this code yet."
      minWidth={560}
      testId="code-uses-log"
      columns={['When', 'Person', 'Device', 'Status']}
    >
      {used.map((entry) => (
        <Table.Tr key={entry.id} data-testid="code-use-row" data-email={entry.email ?? ''}>
          <Table.Td style={{ whiteSpace: 'nowrap' }}>
            <RelativeTime iso={entry.at} />
          </Table.Td>
          <Table.Td style={{ wordBreak: 'break-all' }}>{entry.email}</Table.Td>
          <Table.Td className="mono">
            {entry.agent_id ? (
              <Anchor component={Link} to={`/devices?agent=${entry.agent_id}`}>
                {entry.agent_name}
              </Anchor>
            ) : (
              (entry.serial ?? entry.uuid)
            )}
          </Table.Td>
          <Table.Td>
            <Group gap={6} wrap="nowrap">
              <EnrollStatusBadge status={entry.enroll_status} />
              {entry.enroll_status === 'pending_approval' && entry.agent_id ? <DecideButtons agentId={entry.agent_id} /> : null}
            </Group>
          </Table.Td>
        </Table.Tr>
      ))}
    </LogCard>
  );
}

function Refusals({ entries }: { entries: CodeLogEntry[] }) {
  const refused = entries.filter((entry) => entry.outcome === 'refused');
  return (
    <LogCard
      title="Refused attempts"
      count={refused.length}
      badgeColor="red"
      empty="No device has been refused with this code."
      minWidth={560}
      testId="code-refused-log"
      columns={['When', 'Email given', 'Reason', 'Device']}
    >
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
    </LogCard>
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
          if (outcome.ok && outcome.waiting_for_approval)
            notifications.show({
              color: 'yellow',
              message: `${outcome.email} enrolled a simulated ${outcome.type} device: it is waiting for approval`,
            });
          else if (outcome.ok) notifySuccess(`${outcome.email} enrolled a simulated ${outcome.type} device`);
        },
        onError: (error) => notifyError('The simulator could not run', error),
      },
    );
  };
  return (
    <>
      <Gate permission="simulator.run">
        <Button
          leftSection={<IconPlayerPlay size={16} />}
          onClick={open}
          title="Runs the device simulator with this code, as a person's phone would"
        >
          Simulate a device
        </Button>
      </Gate>
      <Modal opened={opened} onClose={() => setOpened(false)} title="Simulate a person enrolling a device">
        <form onSubmit={submit}>
          <Stack>
            <TextInput
              label="The person's email address"
              description={
                code.domains.length
                  ? `This code allows ${code.domains.map((d) => `@${d}`).join(', ')}; another domain shows the refusal.`
                  : 'This code allows any address.'
              }
              value={email}
              onChange={(e) => setEmail(e.currentTarget.value)}
              required
              data-testid="simulate-email"
            />
            <SegmentedControl
              aria-label="Device type"
              data={[
                { value: 'android', label: 'Android' },
                { value: 'apple', label: 'Apple' },
              ]}
              value={type}
              onChange={(v) => setType(v as 'android' | 'apple')}
            />
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
          <Title order={1} size="h2">
            {code.name}
          </Title>
          <CodeStatusBadge code={code} size="lg" />
        </Group>
        <Group gap="sm">
          <ExportMenu
            path="/api/code-uses/export"
            what="uses and refusals"
            filtered
            params={{ code_id: code.id }}
            testId="code-log-export"
            label="Export log"
          />
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
          <CodeQrCard code={code} />
        </Grid.Col>
        <Grid.Col span={{ base: 12, md: 7 }}>
          <Stack>
            <Card withBorder radius="md" p="md">
              <Details code={code} />
            </Card>
            <LinksCard
              deeplink={code.deeplink}
              appLink={code.app_link}
              testIdPrefix="code"
              deeplinkHint="The enrollment page the QR code opens; share it with people who cannot scan."
            />
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
