/**
 * The domain's errors: services throw ApiError with the status and code the caller should see;
 * the HTTP rooms turn it into their body (the agent API's GLPI-style `[code, message]`, the admin
 * API's `{ error, message }`). It lives outside http/ so that domain folders never import the API.
 */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;

  constructor(status: number, code: string, message: string) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
  }
}

export const badRequest = (message = 'Bad Request') => new ApiError(400, 'ERROR_BAD_REQUEST', message);
export const itemNotFound = (message = 'Item not found') => new ApiError(404, 'ERROR_ITEM_NOT_FOUND', message);
export const sessionTokenMissing = () =>
  new ApiError(401, 'ERROR_SESSION_TOKEN_MISSING', 'parameter session_token is missing or empty');
export const sessionTokenInvalid = () => new ApiError(401, 'ERROR_SESSION_TOKEN_INVALID', 'session_token seems invalid');
export const loginFailed = (message = 'Incorrect username or password') => new ApiError(401, 'ERROR_LOGIN', message);
export const enrollmentRefused = (message: string) => new ApiError(400, 'ERROR_CORE_ADD', message);
