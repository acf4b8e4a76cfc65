import { Anchor, Card, Group, ScrollArea, Text, ThemeIcon, Title } from '@mantine/core';
import {
  IconBan,
  IconCircleCheck,
  IconDeviceMobile,
  IconFile,
  IconInfoCircle,
  IconMail,
  IconTrash,
  IconWifi,
} from '@tabler/icons-react';
import type { ReactNode } from 'react';
import { useFeed } from '../../api/queries.ts';
import type { LiveEvent } from '../../../src-shared/contract/index.ts';
import { Link } from '../../lib/router.tsx';
import { EmptyState, QueryView, RelativeTime } from '../../components/common.tsx';

const EVENT_ICONS: Record<string, { icon: ReactNode; color: string }> = {
  'agent.enrolled': { icon: <IconCircleCheck size={16} />, color: 'teal' },
  'agent.reenrolled': { icon: <IconCircleCheck size={16} />, color: 'teal' },
  'agent.deleted': { icon: <IconTrash size={16} />, color: 'gray' },
  'agent.online': { icon: <IconWifi size={16} />, color: 'teal' },
  'invitation.created': { icon: <IconMail size={16} />, color: 'indigo' },
  'invitation.refused': { icon: <IconBan size={16} />, color: 'red' },
  'enrollment.refused': { icon: <IconBan size={16} />, color: 'red' },
  'invitation.revoked': { icon: <IconBan size={16} />, color: 'orange' },
  'admin.sign_in_failed': { icon: <IconBan size={16} />, color: 'red' },
  'admin.sign_in_throttled': { icon: <IconBan size={16} />, color: 'orange' },
};

function iconOf(type: string) {
  if (EVENT_ICONS[type]) return EVENT_ICONS[type];
  if (type.startsWith('agent.')) return { icon: <IconDeviceMobile size={16} />, color: 'blue' };
  if (type.startsWith('file.') || type.startsWith('package.')) return { icon: <IconFile size={16} />, color: 'grape' };
  if (type.startsWith('invitation.') || type.startsWith('mail.')) return { icon: <IconMail size={16} />, color: 'indigo' };
  return { icon: <IconInfoCircle size={16} />, color: 'gray' };
}

function FeedItem({ event }: { event: LiveEvent }) {
  const { icon, color } = iconOf(event.type);
  const target =
    event.agent_id !== null && event.type !== 'agent.deleted'
      ? `/devices?agent=${event.agent_id}`
      : event.invitation_id !== null && event.type !== 'invitation.deleted'
        ? `/invitations/${event.invitation_id}`
        : null;
  return (
    <Group className="feed-item" gap="sm" py={8} wrap="nowrap" align="flex-start" data-event-type={event.type}>
      <ThemeIcon color={color} variant="light" size={28} radius="xl">
        {icon}
      </ThemeIcon>
      <div style={{ flex: 1, minWidth: 0 }}>
        {target ? (
          <Anchor component={Link} to={target} size="sm" c="var(--mantine-color-text)" style={{ overflowWrap: 'anywhere' }}>
            {event.message}
          </Anchor>
        ) : (
          <Text size="sm" style={{ overflowWrap: 'anywhere' }}>
            {event.message}
          </Text>
        )}
        <Text size="xs" c="dimmed">
          <RelativeTime iso={event.at} /> · {event.type}
        </Text>
      </div>
    </Group>
  );
}

export function ActivityFeed() {
  const feed = useFeed();
  return (
    <Card withBorder radius="md" p="md" h="100%">
      <Title order={4} mb={4}>
        Live activity
      </Title>
      <Text c="dimmed" size="sm" mb="xs">
        What happens on this server, as it happens.
      </Text>
      <QueryView query={feed}>
        {(events) =>
          events.length === 0 ? (
            <EmptyState title="No activity yet" />
          ) : (
            <ScrollArea.Autosize mah={620} type="auto" scrollbars="y" offsetScrollbars>
              <div aria-live="polite" aria-relevant="additions" data-testid="activity-feed">
                {events.map((event) => (
                  <FeedItem key={event.id} event={event} />
                ))}
              </div>
            </ScrollArea.Autosize>
          )
        }
      </QueryView>
    </Card>
  );
}

/** Per fleet: how many of its devices follow every policy, are still applying some, or fail some. */
