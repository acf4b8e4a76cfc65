import { Anchor, Stack } from '@mantine/core';
import { useSettings, useStatus } from '../api/queries.ts';
import { PageHeader, QueryView } from '../components/common.tsx';
import { MailSettingsSection } from '../features/mail-settings.tsx';
import { GeneralForm } from './settings/GeneralForm.tsx';
import { FleetsSection } from './settings/FleetsSection.tsx';
import { SignInSection } from './settings/SignInSection.tsx';

export function SettingsPage() {
  const settings = useSettings();
  const status = useStatus();
  return (
    <>
      <PageHeader
        title="Settings"
        description={
          <>
            How devices reach this server and what invitations carry. The{' '}
            <Anchor href="#helpdesk" size="sm" underline="always">
              helpdesk
            </Anchor>{' '}
            appears on phones and printed cards.
          </>
        }
      />
      <Stack gap="lg" maw={960}>
        <QueryView query={settings}>
          {(data) => <QueryView query={status}>{(server) => <GeneralForm settings={data} status={server} />}</QueryView>}
        </QueryView>
        <FleetsSection />
        <MailSettingsSection />
        <SignInSection />
      </Stack>
    </>
  );
}
