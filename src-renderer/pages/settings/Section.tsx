import { Card, Text, Title } from '@mantine/core';
import type { ReactNode } from 'react';

/** One card of the settings page: a title, what it is for, its form. */
export function Section({
  id,
  title,
  description,
  children,
}: {
  id?: string;
  title: string;
  description?: ReactNode;
  children: ReactNode;
}) {
  return (
    <Card withBorder radius="md" p="lg" id={id}>
      <Title order={4}>{title}</Title>
      {description ? (
        <Text size="sm" c="dimmed" mt={2} mb="md">
          {description}
        </Text>
      ) : (
        <div style={{ height: 12 }} />
      )}
      {children}
    </Card>
  );
}
