import { Alert, Button, Group, SimpleGrid, Stack, Text } from '@mantine/core';
import { IconAlertTriangle, IconDeviceMobile, IconMail, IconWifi } from '@tabler/icons-react';
import { useStatus } from '../api/queries.ts';
import { Link } from '../lib/router.tsx';
import { PageHeader, QueryView } from '../components/common.tsx';
import { UnreachableWarning } from '../features/reachability.tsx';
import { Stat } from './dashboard/Stat.tsx';
import { Funnel } from './dashboard/Funnel.tsx';
import { ServerCard } from './dashboard/ServerCard.tsx';
import { NodesCard } from './dashboard/NodesCard.tsx';
import { ActivityFeed } from './dashboard/ActivityFeed.tsx';
import { ComplianceCard } from './dashboard/ComplianceCard.tsx';
import { Gate } from '../components/permissions.tsx';

export function Dashboard() {
  const status = useStatus();
  return (
    <>
      <PageHeader
        title="Dashboard"
        description="Invitations, devices and the server at a glance."
        actions={
          <Gate permission="invitations.create">
            <Button component={Link} to="/invitations?new=1" leftSection={<IconMail size={16} />}>
              Invite someone
            </Button>
          </Gate>
        }
      />
      <QueryView query={status}>
        {(data) => (
          <Stack gap="lg">
            <UnreachableWarning />
            {data.warnings
              .filter((warning) => !/loopback/i.test(warning))
              .map((warning) => (
                <Alert key={warning} color="orange" variant="light" icon={<IconAlertTriangle size={18} />} title="Warning">
                  <Text size="sm">{warning}</Text>
                </Alert>
              ))}
            {data.counts.pending_approval > 0 ? (
              <Alert
                color="orange"
                variant="light"
                icon={<IconDeviceMobile size={18} />}
                title="Devices waiting for approval"
                data-testid="waiting-approval"
              >
                <Group justify="space-between">
                  <Text size="sm">
                    <Text span fw={700} data-testid="waiting-approval-count">
                      {data.counts.pending_approval.toLocaleString()}
                    </Text>{' '}
                    {data.counts.pending_approval === 1
                      ? "device enrolled with an enrollment code waits for an admin's approval before it can connect."
                      : "devices enrolled with an enrollment code wait for an admin's approval before they can connect."}
                  </Text>
                  <Button component={Link} to="/approvals" size="xs" variant="light" color="orange">
                    Review
                  </Button>
                </Group>
              </Alert>
            ) : null}
            <SimpleGrid cols={{ base: 2, md: 4 }}>
              <Stat
                label="Invitations"
                value={data.counts.invitations}
                hint={`${data.counts.used.toLocaleString()} used so far`}
                color="indigo"
                icon={<IconMail size={20} />}
              />
              <Stat
                label="Pending"
                value={data.counts.pending}
                hint="not used, not expired"
                color="blue"
                icon={<IconMail size={20} />}
              />
              <Stat
                label="Enrolled"
                value={data.counts.enrolled}
                hint={`${data.counts.agents.toLocaleString()} device${data.counts.agents === 1 ? '' : 's'} in all`}
                color="teal"
                icon={<IconDeviceMobile size={20} />}
              />
              <Stat
                label="Online"
                value={data.counts.online}
                hint="connected to the broker"
                color="green"
                icon={<IconWifi size={20} />}
              />
            </SimpleGrid>
            <SimpleGrid cols={{ base: 1, lg: 2 }} spacing="lg">
              <Stack gap="lg">
                <Funnel status={data} />
                <ComplianceCard />
                <ServerCard status={data} />
                <NodesCard status={data} />
              </Stack>
              <ActivityFeed />
            </SimpleGrid>
          </Stack>
        )}
      </QueryView>
    </>
  );
}
