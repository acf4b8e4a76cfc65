/** Pieces shared by the invitation page and the enrollment-code page: both show a QR code, its links, a details table, logs and a simulation. */
import { Alert, Badge, Box, Button, Card, Code, Group, Modal, Overlay, Stack, Table, Text, Title } from '@mantine/core';
import { IconDownload } from '@tabler/icons-react';
import type { ReactNode } from 'react';
import type { SimulateResult } from '../../src-shared/contract/index.ts';
import { Link } from '../lib/router.tsx';
import { useAgent } from '../api/queries.ts';
import { CopyIcon } from '../components/common.tsx';
import { enrollStatusOf } from '../lib/devices.ts';
import { DecideButtons } from './approval.tsx';

/** The QR code with a PNG/SVG download and one more action (print or poster); `blockedReason` greys it out ("Code expired"). */
export function QrCard(props: {
  /** `/api/invitations/7` or `/api/codes/3`: the QR images live below it. */
  apiPath: string;
  /** Changes with the link, so a rotated link is not served from the cache. */
  version: string;
  alt: string;
  testId: string;
  /** File names are `${downloadName}-qr.png|svg`. */
  downloadName: string;
  blockedReason: string;
  hint: string;
  extraAction: ReactNode;
}) {
  const { apiPath, version, downloadName } = props;
  return (
    <Card withBorder radius="md" p="lg">
      <Box pos="relative" className="qr-frame" maw={420} mx="auto">
        <img src={`${apiPath}/qr.svg?v=${version}`} alt={props.alt} data-testid={props.testId} width={396} height={396} />
        {props.blockedReason ? (
          <Overlay color="#fff" backgroundOpacity={0.82} blur={1} center radius="md">
            <Badge size="xl" color="gray" variant="filled">
              Code {props.blockedReason}
            </Badge>
          </Overlay>
        ) : null}
      </Box>
      <Text ta="center" size="sm" c="dimmed" mt="sm">
        {props.hint}
      </Text>
      <Group justify="center" mt="md" gap="sm">
        <Button
          component="a"
          href={`${apiPath}/qr.png?size=1024&v=${version}`}
          download={`${downloadName}-qr.png`}
          variant="default"
          leftSection={<IconDownload size={16} />}
        >
          PNG
        </Button>
        <Button
          component="a"
          href={`${apiPath}/qr.svg?v=${version}`}
          download={`${downloadName}-qr.svg`}
          variant="default"
          leftSection={<IconDownload size={16} />}
        >
          SVG
        </Button>
        {props.extraAction}
      </Group>
    </Card>
  );
}

export function LinkRow({ label, value, testId, hint }: { label: string; value: string; testId: string; hint: string }) {
  return (
    <div>
      <Group justify="space-between" gap={4} wrap="nowrap">
        <Text size="sm" fw={500}>
          {label}
        </Text>
        <CopyIcon value={value} label={`Copy ${label.toLowerCase()}`} />
      </Group>
      <Code block className="mono" data-testid={testId} style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-all' }}>
        {value}
      </Code>
      <Text size="xs" c="dimmed" mt={2}>
        {hint}
      </Text>
    </div>
  );
}

/** The deeplink and app link, each with a copy button; `testIdPrefix` gives `${prefix}-deeplink` and `${prefix}-app-link`. */
export function LinksCard({
  deeplink,
  appLink,
  testIdPrefix,
  deeplinkHint,
}: {
  deeplink: string;
  appLink: string;
  testIdPrefix: string;
  deeplinkHint: string;
}) {
  return (
    <Card withBorder radius="md" p="md">
      <Stack gap="md">
        <LinkRow label="Deeplink" value={deeplink} testId={`${testIdPrefix}-deeplink`} hint={deeplinkHint} />
        <LinkRow
          label="App link"
          value={appLink}
          testId={`${testIdPrefix}-app-link`}
          hint="Opens the agent app directly on a phone where it is installed."
        />
      </Stack>
    </Card>
  );
}

/** Label/value rows of a detail page. */
export function DetailsTable({ rows }: { rows: [string, ReactNode][] }) {
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

/** A titled log with its count, a sentence when empty, else a striped table with the given columns; `children` are its rows. */
export function LogCard(props: {
  title: string;
  count: number;
  badgeColor?: string;
  empty: string;
  minWidth: number;
  testId: string;
  columns: string[];
  children: ReactNode;
}) {
  return (
    <Card withBorder radius="md" p="md">
      <Title order={5} mb="xs">
        {props.title}{' '}
        {props.count ? (
          <Badge color={props.badgeColor} variant="light" ml={4}>
            {props.count}
          </Badge>
        ) : null}
      </Title>
      {props.count === 0 ? (
        <Text size="sm" c="dimmed">
          {props.empty}
        </Text>
      ) : (
        <Table.ScrollContainer minWidth={props.minWidth}>
          <Table verticalSpacing={4} fz="sm" striped data-testid={props.testId}>
            <Table.Thead>
              <Table.Tr>
                {props.columns.map((column) => (
                  <Table.Th key={column}>{column}</Table.Th>
                ))}
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>{props.children}</Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
    </Card>
  );
}

/**
 * A simulated device enrolled with a code that needs approval: it waits (the broker refuses it until
 * then, and it keeps trying); approved here or anywhere else, it comes online, live.
 */
function ApprovalWait({ agentId, type, serial }: { agentId: number; type: string; serial: string | null }) {
  const { data: agent } = useAgent(agentId);
  const status = agent?.enroll_status ?? 'pending_approval';
  if (status === 'pending_approval')
    return (
      <Alert color="yellow" variant="light" title="Waiting for approval" data-testid="simulation-waiting">
        <Stack gap="xs">
          <Text size="sm">
            {type} device {serial} enrolled as agent {agentId} with a code that needs an admin&apos;s approval. Until it is
            approved, it can do nothing but wait: it keeps trying and comes online once approved (here, on the Approvals page or
            in the device&apos;s details).
          </Text>
          <DecideButtons agentId={agentId} />
        </Stack>
      </Alert>
    );
  if (status !== 'enrolled')
    return (
      <Alert color="red" variant="light" title={`The device was ${enrollStatusOf(status).label.toLowerCase()}`}>
        {type} device {serial} (agent {agentId}) will not come online.
      </Alert>
    );
  return (
    <Alert
      color="teal"
      variant="light"
      title={agent?.is_online ? 'Approved: the simulated device is online' : 'Approved: the simulated device is connecting…'}
      data-testid="simulation-approved"
    >
      {type} device {serial} is agent {agentId}: it appears on the Devices page.
    </Alert>
  );
}

export function SimulationResult({ result, onClose }: { result: SimulateResult | null; onClose: () => void }) {
  return (
    <Modal opened={result !== null} onClose={onClose} title="Simulated device" size="lg">
      {result ? (
        <Stack>
          {result.ok && result.waiting_for_approval && result.agent_id ? (
            <ApprovalWait agentId={result.agent_id} type={result.type} serial={result.serial} />
          ) : result.ok ? (
            <Alert color="teal" variant="light" title="The simulated device enrolled">
              {result.type} device {result.serial} is now agent {result.agent_id}: it appears on the Devices page.
            </Alert>
          ) : (
            <Alert color="red" variant="light" title="Enrollment was refused">
              {result.error}
            </Alert>
          )}
          <Code block data-testid="simulation-log" style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-word' }}>
            {result.log.join('\n') || '(no steps ran)'}
          </Code>
          <Group justify="flex-end">
            {result.ok && result.agent_id ? (
              <Button component={Link} to={`/devices?agent=${result.agent_id}`} variant="light" onClick={onClose}>
                Show the device
              </Button>
            ) : null}
            <Button onClick={onClose}>Close</Button>
          </Group>
        </Stack>
      ) : null}
    </Modal>
  );
}
