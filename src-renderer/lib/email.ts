// The backend's pragmatic address check (invitations.ts), so the form agrees with the server:
// one @, no spaces or specials in the local part, a dotted domain of letters, digits and hyphens.
const EMAIL = /^[^\s@"<>(),;:\\[\]]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+$/;

export function isValidEmail(email: string): boolean {
  return email.length <= 254 && EMAIL.test(email.trim());
}

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** The message shown under an email field as the admin types; null when fine (or still empty). */
export function emailProblem(value: string, { required = true } = {}): string | null {
  const email = value.trim();
  if (email === '') return required ? 'An email address is required' : null;
  if (!email.includes('@')) return 'An email address needs an @';
  if (/\s/.test(email)) return 'An email address has no spaces';
  if (email.length > 254) return 'That address is too long';
  if (!isValidEmail(email)) {
    const domain = email.slice(email.lastIndexOf('@') + 1);
    if (!domain.includes('.')) return `The domain "${domain}" needs a dot, as in example.com`;
    return `"${email}" is not a valid email address`;
  }
  return null;
}
