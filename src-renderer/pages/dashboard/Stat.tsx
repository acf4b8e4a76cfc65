import { Group, Paper, Text, ThemeIcon } from '@mantine/core';
import type { ReactNode } from 'react';

export function Stat({
  label,
  value,
  hint,
  color,
  icon,
}: {
  label: string;
  value: number;
  hint?: string;
  color: string;
  icon: ReactNode;
}) {
  return (
    <Paper withBorder p="md" radius="md">
      <Group justify="space-between" align="flex-start" wrap="nowrap">
        <div>
          <Text c="dimmed" size="xs" tt="uppercase" fw={700}>
            {label}
          </Text>
          <Text fw={700} fz={28} lh={1.2} data-testid={`stat-${label.toLowerCase().replace(/\s+/g, '-')}`}>
            {value.toLocaleString()}
          </Text>
          {hint ? (
            <Text c="dimmed" size="xs">
              {hint}
            </Text>
          ) : null}
        </div>
        <ThemeIcon color={color} variant="light" size={38} radius="md">
          {icon}
        </ThemeIcon>
      </Group>
    </Paper>
  );
}
