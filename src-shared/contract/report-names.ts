// The reports' names and the console's day ranges: plain data (no TypeBox), so the console and the
// CLI import them without the schemas (test/unit/contract/console-bundle.test.ts).

export const REPORT_NAMES = ['enrollments', 'online', 'compliance', 'os', 'models', 'deployments'] as const;
export type ReportName = (typeof REPORT_NAMES)[number];

/** The day ranges the console offers (any 1 to 366 is accepted). */
export const REPORT_RANGES = [7, 30, 90] as const;
