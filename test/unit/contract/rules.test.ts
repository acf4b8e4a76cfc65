// The forms' rules (contract/rules.ts) are what the contract's schemas enforce: a form that accepts
// what the server refuses (or the reverse) is the drift this guards against.
import { describe, expect, it } from 'vitest';
import { CodeCreate, CommandBody, InvitationInput, Settings } from '../../../src-shared/contract/index.ts';
import * as rules from '../../../src-shared/contract/rules.ts';

describe('the forms use the server rules', () => {
  it('the schemas take their bounds and command names from the rules', () => {
    expect(InvitationInput.properties.days).toMatchObject({
      minimum: rules.INVITATION_LIFETIME_DAYS.min,
      maximum: rules.INVITATION_LIFETIME_DAYS.max,
    });
    expect(InvitationInput.properties.email).toMatchObject({ maxLength: rules.EMAIL_MAX_LENGTH });
    expect(CodeCreate.properties.days).toMatchObject({
      minimum: rules.CODE_LIFETIME_DAYS.min,
      maximum: rules.CODE_LIFETIME_DAYS.max,
    });
    expect(CodeCreate.properties.max_uses).toMatchObject({ maximum: rules.CODE_MAX_USES });
    expect(CommandBody.properties.command.anyOf.map((literal: { const: unknown }) => literal.const)).toEqual([
      ...rules.AGENT_COMMANDS,
    ]);
    expect(Settings.properties.invitation_lifetime_days).toMatchObject({
      minimum: rules.INVITATION_LIFETIME_DAYS.min,
      maximum: rules.INVITATION_LIFETIME_DAYS.max,
    });
  });

  it('has the settings patterns of the schema', () => {
    expect(Settings.properties.public_host).toMatchObject({
      pattern: rules.PUBLIC_HOST_PATTERN,
      maxLength: rules.HOST_MAX_LENGTH,
    });
    const scheme = new RegExp(String(Reflect.get(Settings.properties.app_link_scheme, 'pattern')));
    for (const candidate of ['mdmagent', 'flyve', 'a+b.c-d', 'http', 'https', 'javascript', 'Mdm', '1abc', 'a'.repeat(33), '']) {
      const formAccepts =
        rules.APP_LINK_SCHEME.test(candidate) && !(rules.BROWSER_SCHEMES as readonly string[]).includes(candidate);
      expect(scheme.test(candidate), candidate).toBe(formAccepts);
      expect(new RegExp(rules.APP_LINK_SCHEME_PATTERN).test(candidate), candidate).toBe(formAccepts);
    }
  });

  it('judges addresses and hosts as the server does', () => {
    for (const email of ['ada@example.com', 'first.last+tag@sub.example.co']) expect(rules.isValidEmail(email), email).toBe(true);
    for (const email of ['a@b', 'a b@example.com', 'a@-example.com', `${'x'.repeat(250)}@example.com`])
      expect(rules.isValidEmail(email), email).toBe(false);
    for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', ' LOCALHOST ', '::1', '[::1]'])
      expect(rules.isLoopback(host), host).toBe(true);
    for (const host of ['192.168.1.20', 'mdm.example.com']) expect(rules.isLoopback(host), host).toBe(false);
    // Every host the form accepts, the server stores.
    const stored = new RegExp(rules.PUBLIC_HOST_PATTERN);
    for (const host of ['mdm.example.com', '192.168.1.20', 'fe80::1', 'a-b.c']) {
      expect(rules.isValidHost(host), host).toBe(true);
      expect(stored.test(host), host).toBe(true);
    }
  });
});
