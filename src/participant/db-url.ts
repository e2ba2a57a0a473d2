// A database URL in messages and logs, for every resource kind: no driver needed.

/** The URL without its password, for messages and logs. */
export function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== '') u.password = '***';
    return u.toString();
  } catch {
    return '(an unparsable URL)';
  }
}
