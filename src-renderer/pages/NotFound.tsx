import { Button } from '@mantine/core';
import { EmptyState, PageHeader } from '../components/common.tsx';
import { Link } from '../lib/router.tsx';

export function NotFound() {
  return (
    <>
      <PageHeader title="Page not found" />
      <EmptyState
        title="There is no page here"
        action={
          <Button component={Link} to="/" variant="light">
            Go to the dashboard
          </Button>
        }
      >
        The address may be mistyped, or what it pointed to was deleted.
      </EmptyState>
    </>
  );
}
