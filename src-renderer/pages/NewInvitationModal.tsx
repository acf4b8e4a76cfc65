import { Alert, Button, Checkbox, Group, Modal, NumberInput, Select, SimpleGrid, Stack, Text, TextInput } from '@mantine/core';
import { IconCheck, IconInfoCircle } from '@tabler/icons-react';
import { useState, type FormEvent } from 'react';
import { admin, AdminApiError } from '../api/client.ts';
import { useCreateInvitation, useFleets, useSettings } from '../api/queries.ts';
import { AgentAppNote } from '../features/agent-app.tsx';
import { navigate } from '../lib/router.tsx';
import { notifyError, notifySuccess } from '../components/common.tsx';
import { emailProblem } from '../lib/email.ts';
import { INVITATION_LIFETIME_DAYS as LIFETIME, isWholeNumberIn } from '../../src-shared/contract/rules.ts';
import { UnreachableWarning } from '../features/reachability.tsx';
import type { Invitation } from '../../src-shared/contract/index.ts';

/** One invitation: email checked as it is typed, names, fleet and lifetime. */
export function NewInvitationModal({ opened, onClose }: { opened: boolean; onClose: () => void }) {
  const fleets = useFleets();
  const settings = useSettings();
  const create = useCreateInvitation();
  const [email, setEmail] = useState('');
  const [firstname, setFirstname] = useState('');
  const [lastname, setLastname] = useState('');
  const [fleet, setFleet] = useState<string | null>(null);
  const [days, setDays] = useState<number | string>('');
  const [blurred, setBlurred] = useState(false);
  const [another, setAnother] = useState(false);
  const [sendEmail, setSendEmail] = useState<boolean | null>(null);
  const mailOn = typeof settings.data?.mail_send_on_create === 'boolean';
  const emailIt = sendEmail ?? settings.data?.mail_send_on_create === true;
  const [serverError, setServerError] = useState<string | null>(null);
  // The address already has a pending invitation: say so, and offer to resend it.
  const [pending, setPending] = useState<Invitation | null>(null);
  const [resending, setResending] = useState(false);

  const problem = emailProblem(email);
  // As you type: once the address has an @ (or the field was left), say what is wrong with it.
  const showProblem = (blurred || email.includes('@')) && email.trim() !== '' ? problem : null;
  const defaultDays = settings.data?.invitation_lifetime_days ?? 7;
  const daysValue = days === '' ? null : Number(days);
  const daysProblem =
    daysValue !== null && !isWholeNumberIn(daysValue, LIFETIME) ? `Between ${LIFETIME.min} and ${LIFETIME.max} days` : null;

  const reset = () => {
    setEmail('');
    setFirstname('');
    setLastname('');
    setBlurred(false);
    setServerError(null);
    setPending(null);
  };

  const finish = (invitation: Invitation) => {
    reset();
    if (!another) {
      onClose();
      navigate(`/invitations/${invitation.id}`);
    }
  };

  const resendPending = async () => {
    if (!pending) return;
    setResending(true);
    try {
      const resent = await admin.invitations.resend(pending.id);
      notifySuccess(`Invitation #${resent.id} emailed again to ${resent.email}`);
      finish(resent);
    } catch (error) {
      notifyError('The invitation was not resent', error);
    } finally {
      setResending(false);
    }
  };

  const submit = (event: FormEvent | null, second = false) => {
    event?.preventDefault();
    setBlurred(true);
    if (problem || daysProblem) return;
    setServerError(null);
    setPending(null);
    create.mutate(
      {
        email: email.trim(),
        ...(firstname.trim() ? { firstname: firstname.trim() } : {}),
        ...(lastname.trim() ? { lastname: lastname.trim() } : {}),
        ...(fleet ? { fleet } : {}),
        ...(daysValue !== null ? { days: daysValue } : {}),
        ...(mailOn ? { send_email: emailIt } : {}),
        ...(second ? { another: true } : {}),
      },
      {
        onSuccess: (invitation) => {
          notifySuccess(`Invitation created for ${invitation.email}`);
          finish(invitation);
        },
        onError: (error) => {
          const existing =
            error instanceof AdminApiError && error.code === 'ERROR_INVITATION_PENDING'
              ? (error.body.invitation as Invitation | undefined)
              : undefined;
          if (existing) setPending(existing);
          else if (error instanceof AdminApiError && error.status === 400) setServerError(error.message);
          else notifyError('The invitation was not created', error);
        },
      },
    );
  };

  const fleetOptions = (fleets.data ?? []).map((f) => ({ value: f.name, label: f.is_default ? `${f.name} (default)` : f.name }));
  return (
    <Modal opened={opened} onClose={onClose} title="New invitation" size="lg">
      <form onSubmit={submit} noValidate>
        <Stack>
          <AgentAppNote />
          <TextInput
            label="Email address"
            description="The person signs in with this address on their device."
            placeholder="name@example.com"
            type="email"
            required
            data-autofocus
            autoComplete="off"
            value={email}
            onChange={(e) => {
              setEmail(e.currentTarget.value);
              setServerError(null);
              setPending(null);
            }}
            onBlur={() => setBlurred(true)}
            error={showProblem ?? serverError}
            rightSection={
              !problem ? <IconCheck size={16} color="var(--mantine-color-teal-6)" aria-label="Valid address" /> : null
            }
          />
          <SimpleGrid cols={2}>
            <TextInput
              label="First name"
              maxLength={100}
              value={firstname}
              onChange={(e) => setFirstname(e.currentTarget.value)}
            />
            <TextInput label="Last name" maxLength={100} value={lastname} onChange={(e) => setLastname(e.currentTarget.value)} />
          </SimpleGrid>
          <SimpleGrid cols={2}>
            <Select
              label="Fleet"
              placeholder={fleetOptions.find((f) => f.label.endsWith('(default)'))?.label ?? 'Default fleet'}
              data={fleetOptions}
              value={fleet}
              onChange={setFleet}
              clearable
              allowDeselect
            />
            <NumberInput
              label="Valid for (days)"
              placeholder={`${defaultDays} (default)`}
              min={LIFETIME.min}
              max={LIFETIME.max}
              allowDecimal={false}
              value={days}
              onChange={setDays}
              error={daysProblem}
            />
          </SimpleGrid>
          {mailOn ? (
            <Checkbox
              label="Email the invitation to this address"
              description="With its QR code and link; you can also print it or send the link yourself."
              checked={emailIt}
              onChange={(e) => setSendEmail(e.currentTarget.checked)}
            />
          ) : null}
          {pending ? (
            <Alert color="yellow" icon={<IconInfoCircle size={18} />} title="Already invited" data-testid="pending-invitation">
              <Stack gap="xs">
                <Text size="sm">
                  {pending.email} already has a pending invitation (#{pending.id}), valid until{' '}
                  {new Date(pending.expires_at).toLocaleString()}. Resend it with the same link, or create a second one (for
                  another device).
                </Text>
                <Group gap="xs">
                  <Button size="xs" loading={resending} onClick={() => void resendPending()}>
                    Resend invitation #{pending.id}
                  </Button>
                  <Button
                    size="xs"
                    variant="default"
                    onClick={() => {
                      reset();
                      onClose();
                      navigate(`/invitations/${pending.id}`);
                    }}
                  >
                    Open it
                  </Button>
                  <Button size="xs" variant="subtle" loading={create.isPending} onClick={() => submit(null, true)}>
                    Create another anyway
                  </Button>
                </Group>
              </Stack>
            </Alert>
          ) : null}
          <Text size="xs" c="dimmed">
            The invitation carries a QR code and a deeplink; the device that uses it enrolls into the chosen fleet.
          </Text>
          <UnreachableWarning
            what={emailIt ? 'The email, QR code and link of this invitation' : 'The QR code and link of this invitation'}
          />
          <Group justify="space-between" mt="xs">
            <Checkbox
              label="Create another after this one"
              checked={another}
              onChange={(e) => setAnother(e.currentTarget.checked)}
            />
            <Group gap="sm">
              <Button variant="default" onClick={onClose}>
                Cancel
              </Button>
              <Button type="submit" loading={create.isPending}>
                Create invitation
              </Button>
            </Group>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
