// What the email fields say as the admin types; the rule itself is the server's (contract/rules.ts).
import { EMAIL_MAX_LENGTH, isValidEmail } from '../../src-shared/contract/rules.ts';

/** The message shown under an email field as the admin types; null when fine (or still empty). */
export function emailProblem(value: string, { required = true } = {}): string | null {
  const email = value.trim();
  if (email === '') return required ? 'An email address is required' : null;
  if (!email.includes('@')) return 'An email address needs an @';
  if (/\s/.test(email)) return 'An email address has no spaces';
  if (email.length > EMAIL_MAX_LENGTH) return 'That address is too long';
  if (!isValidEmail(email)) {
    const domain = email.slice(email.lastIndexOf('@') + 1);
    if (!domain.includes('.')) return `The domain "${domain}" needs a dot, as in example.com`;
    return `"${email}" is not a valid email address`;
  }
  return null;
}
