import { Anchor, Badge, Group, Text } from '@mantine/core';
import { useSettings } from '../api/queries.ts';
import { Link } from '../lib/router.tsx';
import { useCan } from '../components/permissions.tsx';

/** Which agent app the codes are made for (setting `agent_app`), so an admin knows what phones need. */
export function AgentAppNote({ compact = false }: { compact?: boolean }) {
  const settings = useSettings();
  // Only a role that may change the setting is offered the way there.
  const canChange = useCan('settings.write').allowed;
  const app = settings.data?.agent_app;
  if (!app) return null;
  const flyve = app === 'flyve';
  return (
    // The badge keeps its width; the sentence beside it wraps (or goes below) in a narrow column.
    <Group gap={6} wrap="wrap" data-testid="agent-app-note">
      <Badge variant="light" color={flyve ? 'grape' : 'blue'} size="sm" style={{ flexShrink: 0 }}>
        {flyve ? 'Flyve MDM agent' : "Spec's MDM agent"}
      </Badge>
      {compact ? null : (
        <Text size="xs" c="dimmed">
          {flyve ? 'Codes carry flyve://register and the Flyve encoding.' : 'Codes are for the spec’s agent app.'}
          {canChange ? (
            <>
              {' '}
              <Anchor component={Link} to="/settings" size="xs" underline="always">
                Change
              </Anchor>
            </>
          ) : null}
        </Text>
      )}
    </Group>
  );
}
