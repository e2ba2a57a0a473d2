// A console API refusal: an HTTP status and one line that says what is
// wrong (with extra fields for the page, e.g. where the leader is).

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}
