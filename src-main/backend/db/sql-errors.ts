/**
 * The kinds of database error a repository maps to an answer (a unique violation is a 409),
 * whichever engine raised it: better-sqlite3's SQLITE_CONSTRAINT_* codes, PostgreSQL's SQLSTATEs.
 */
function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** A UNIQUE constraint or index (or a primary key) refused the row. */
export function isUniqueViolation(error: unknown): boolean {
  const code = codeOf(error);
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === '23505';
}

/** A foreign key refused the row (it names a row that does not exist, or one still referenced). */
export function isForeignKeyViolation(error: unknown): boolean {
  const code = codeOf(error);
  return code === 'SQLITE_CONSTRAINT_FOREIGNKEY' || code === '23503';
}

/** A CHECK constraint refused the row. */
export function isCheckViolation(error: unknown): boolean {
  const code = codeOf(error);
  return code === 'SQLITE_CONSTRAINT_CHECK' || code === '23514';
}
