// What the signed-in role may do, as the console shows it: one hook (`useCan`) over GET /api/me's
// permissions and the contract's role table, and the two ways a control says no — disabled with the
// reason as its tooltip (`Gate`), or a line above a form that the role may read but not change
// (`RoleNotice`). The server refuses the same things (403 naming the permission): this only spares
// the admin a click that would fail.
import { Alert, Tooltip } from '@mantine/core';
import { IconLock } from '@tabler/icons-react';
import { cloneElement, type ReactElement, type ReactNode } from 'react';
import { useMe } from '../api/accounts.ts';
import { PERMISSIONS, type Permission } from '../../src-shared/contract/permissions.ts';

export interface Can {
  /** Whether the role holds the permission; false while who is signed in is not known yet. */
  allowed: boolean;
  /** Why not, for a tooltip or a line: "Your role (operator) cannot wipe devices"; null when allowed or not known yet. */
  reason: string | null;
}

/** After "Your role (admin) cannot change the server settings": which they are (OWNER_SETTINGS in the contract). */
export const OWNER_SETTINGS_NOTE =
  ': the public host, the MQTT TLS port, the deeplink page, the bug collector, the SMTP server and the sign-in settings are the owner’s.';

/** "Your role (operator) cannot wipe devices". */
export const refusalReason = (role: string, permission: Permission) => `Your role (${role}) cannot ${PERMISSIONS[permission]}`;

/** Whether the signed-in role may do `permission`, and why not. */
export function useCan(permission: Permission): Can {
  const me = useMe();
  if (!me.data) return { allowed: false, reason: null };
  if (me.data.permissions.includes(permission)) return { allowed: true, reason: null };
  return { allowed: false, reason: refusalReason(me.data.role, permission) };
}

/**
 * A control the role may not use: disabled, its reason shown on hover and focus (a disabled button
 * takes no pointer events, so the wrapper carries the tooltip and the reason, `data-refused`).
 * While the role is not known yet, disabled without a reason.
 */
export function Gate({
  permission,
  children,
}: {
  permission: Permission;
  /** The control; or a Tooltip around it, whose hint the reason then replaces. */
  children: ReactElement<{ disabled?: boolean; children?: ReactNode }>;
}) {
  const can = useCan(permission);
  if (can.allowed) return children;
  const control = children.type === Tooltip ? (children.props.children as ReactElement<{ disabled?: boolean }>) : children;
  const disabled = cloneElement(control, { disabled: true });
  if (can.reason === null) return disabled;
  return (
    <Tooltip label={can.reason} withinPortal events={{ hover: true, focus: true, touch: true }}>
      <span
        role="group"
        style={{ display: 'inline-block', cursor: 'not-allowed' }}
        data-refused={permission}
        aria-label={can.reason}
        tabIndex={0}
      >
        {disabled}
      </span>
    </Tooltip>
  );
}

/**
 * Above a form the role may read but not change: the reason, once (the form's controls are
 * disabled by the caller, with `useCan(permission).allowed`). Nothing while the role may.
 */
export function RoleNotice({ permission, children }: { permission: Permission; children?: ReactNode }) {
  const can = useCan(permission);
  if (can.allowed || can.reason === null) return null;
  return (
    <Alert color="gray" variant="light" icon={<IconLock size={16} />} data-refused={permission} mb="sm">
      {can.reason}
      {children ?? '.'}
    </Alert>
  );
}
