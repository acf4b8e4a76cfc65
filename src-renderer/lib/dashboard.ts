import type { StatusCounts } from '../../src-shared/contract/index.ts';
import { countOf } from './format.ts';

export interface FunnelStep {
  label: string;
  value: number;
  color: string;
  /** Share of the previous step, e.g. "75% of invited". */
  rate: string;
  /** What the number counts, in words. */
  means: string;
}

/**
 * Ways in → enrolled → online. Devices come in two ways: an invitation (one person, one device)
 * or an enrollment code (one QR code for many); both count, as the Devices page counts every
 * device. The funnel never widens: the first step is at least the enrolled, online at most them.
 */
export function funnelOf(
  counts: Pick<StatusCounts, 'invitations' | 'enrolled' | 'online' | 'code_devices' | 'code_enrolled' | 'pending_approval'>,
): FunnelStep[] {
  const invitations = Math.max(0, counts.invitations);
  const byCode = Math.max(0, counts.code_devices);
  const enrolled = Math.max(0, counts.enrolled);
  const withCode = Math.min(Math.max(0, counts.code_enrolled), enrolled);
  const top = Math.max(invitations + byCode, enrolled);
  const online = Math.min(Math.max(0, counts.online), enrolled);
  const rate = (value: number, of: number, name: string) => (of > 0 ? `${Math.round((value / of) * 100)}% of ${name}` : '—');
  const waiting =
    counts.pending_approval > 0 ? `; ${countOf(counts.pending_approval, 'more waits', 'more wait')} for approval` : '';
  return [
    {
      label: byCode > 0 ? 'Invited or with a code' : 'Invited',
      value: top,
      color: 'indigo.6',
      rate: '',
      means: `${countOf(invitations, 'invitation')} sent${byCode > 0 ? `, ${countOf(byCode, 'device')} came with an enrollment code` : ''}`,
    },
    {
      label: 'Enrolled',
      value: enrolled,
      color: 'teal.6',
      rate: rate(enrolled, top, byCode > 0 ? 'those' : 'invited'),
      means: `devices enrolled now: ${(enrolled - withCode).toLocaleString()} with an invitation, ${withCode.toLocaleString()} with a code${waiting}`,
    },
    {
      label: 'Online',
      value: online,
      color: 'green.5',
      rate: rate(online, enrolled, 'enrolled'),
      means: 'enrolled devices connected to the broker right now',
    },
  ];
}
