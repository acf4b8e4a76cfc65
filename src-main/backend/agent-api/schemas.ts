import { Type } from 'typebox';

/** Query tokens (the spec's; headers work too: tokens.ts). */
export const TokenQuery = Type.Object({
  session_token: Type.Optional(Type.String({ maxLength: 256 })),
  user_token: Type.Optional(Type.String({ maxLength: 256 })),
});

export const SessionQuery = Type.Object({ session_token: Type.Optional(Type.String({ maxLength: 256 })) });

export const IdParams = Type.Object({ id: Type.Integer({ minimum: 1, maximum: 2 ** 53 - 1 }) });
