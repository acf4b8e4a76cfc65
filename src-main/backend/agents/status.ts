/** The words of `agents.enroll_status`, spelled here once. */
export const ENROLL_STATUS = {
  enrolled: 'enrolled',
  /** Enrolled with a code that needs an admin's approval: no broker login, no downloads yet. */
  pendingApproval: 'pending_approval',
  rejected: 'rejected',
  /** An admin's Unenroll is on its way: the agent still connects, to receive it. */
  unenrolling: 'unenrolling',
  unenrolled: 'unenrolled',
} as const;

export type EnrollStatus = (typeof ENROLL_STATUS)[keyof typeof ENROLL_STATUS];

/** The statuses whose agent may hold a broker account and log in. */
export const MAY_CONNECT: readonly string[] = [ENROLL_STATUS.enrolled, ENROLL_STATUS.unenrolling];

/** An admin's unenroll (or rejection) frees a device for whoever enrolls it next. */
export const FREED: readonly string[] = [ENROLL_STATUS.unenrolling, ENROLL_STATUS.unenrolled, ENROLL_STATUS.rejected];

/** Agent accounts that may not download: the device waits for approval or was rejected. */
export const HELD: readonly string[] = [ENROLL_STATUS.pendingApproval, ENROLL_STATUS.rejected];
