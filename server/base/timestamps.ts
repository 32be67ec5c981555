// Timestamps as the API shows them: ISO 8601 strings in UTC. Every row-to-response mapper converts
// through here, so a timestamp reads the same whichever route, job or command shows it.

/**
 * A timestamptz value as an ISO 8601 string. The driver hands timestamps over as PostgreSQL text
 * ("2026-01-02 03:04:05.678901+00"), which Date does not parse reliably; a Date and milliseconds since
 * the epoch (the clock's now()) are accepted too.
 */
export function toIsoTimestamp(value: Date | string | number): string {
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'number') return new Date(value).toISOString();
  const normalised = value
    .replace(' ', 'T')
    .replace(/([+-]\d\d)$/, '$1:00')
    .replace(/([+-]\d\d)(\d\d)$/, '$1:$2');
  const date = new Date(normalised);
  if (Number.isNaN(date.getTime())) throw new Error(`not a timestamp: ${value}`);
  return date.toISOString();
}

/** toIsoTimestamp for a nullable column. */
export function toIsoTimestampOrNull(value: Date | string | number | null | undefined): string | null {
  return value === null || value === undefined ? null : toIsoTimestamp(value);
}
