import { Type, type Static } from 'typebox';

/** Every admin-API error body: `{ error: CODE, message }` (admin-api/errors.ts); bad input is a 4xx. */
export const ApiErrorBody = Type.Object({ error: Type.String(), message: Type.String() });
export type ApiErrorBody = Static<typeof ApiErrorBody>;

/** The codes the admin API answers with, beyond those of a single capability. */
export type ApiErrorCode =
  | 'ERROR_BAD_REQUEST'
  | 'ERROR_UNAUTHORIZED'
  | 'ERROR_FORBIDDEN'
  | 'ERROR_NOT_FOUND'
  | 'ERROR_SIGN_IN'
  | 'ERROR_NOT_AVAILABLE'
  | 'ERROR_LINK_TOO_LONG'
  | 'ERROR_INVITATION_PENDING'
  | 'ERROR_INVITATION_USED'
  | 'ERROR_INVITATION_NOT_PENDING'
  | 'ERROR_ALREADY_REMOVED'
  | 'ERROR_MAIL_SEND'
  | 'ERROR_UNSUPPORTED_MEDIA_TYPE'
  | 'ERROR_PAYLOAD_TOO_LARGE'
  | (string & {});
