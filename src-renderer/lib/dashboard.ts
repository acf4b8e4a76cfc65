export interface FunnelStep {
  label: string;
  value: number;
  color: string;
  /** Share of the previous step, e.g. "75% of invited". */
  rate: string;
}

/**
 * Invited → enrolled → online. Enrolled counts devices enrolled through an invitation (a device
 * re-enrolling does not count twice); online is capped by enrolled so the funnel never widens.
 */
export function funnelOf(counts: { invitations: number; used: number; enrolled: number; online: number }): FunnelStep[] {
  const invited = Math.max(0, counts.invitations);
  const enrolled = Math.min(Math.max(0, counts.used), invited || counts.used);
  const online = Math.min(Math.max(0, counts.online), Math.max(enrolled, counts.enrolled));
  const rate = (value: number, of: number, name: string) => (of > 0 ? `${Math.round((value / of) * 100)}% of ${name}` : '—');
  return [
    { label: 'Invited', value: invited, color: 'indigo.6', rate: '' },
    { label: 'Enrolled', value: enrolled, color: 'teal.6', rate: rate(enrolled, invited, 'invited') },
    { label: 'Online', value: online, color: 'green.5', rate: rate(online, enrolled, 'enrolled') },
  ];
}
