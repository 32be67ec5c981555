// Quiet hours: a daily window of local time ("22:00" to "07:00", across midnight when the end comes
// first) in the contact's IANA timezone, during which remote channels wait for its end. Computed from
// the time zone database at each instant, so a window across a DST change ends at the local end time
// of that night, whatever the offset did meanwhile.

export interface QuietHours {
  start: string;
  end: string;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timezone: string): Intl.DateTimeFormat {
  let format = formatters.get(timezone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: timezone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    if (formatters.size > 1000) formatters.clear();
    formatters.set(timezone, format);
  }
  return format;
}

interface LocalTime {
  year: number;
  month: number;
  day: number;
  minutes: number;
}

function localTime(instant: number, timezone: string): LocalTime & { offsetMs: number } {
  const parts = Object.fromEntries(
    formatter(timezone)
      .formatToParts(new Date(instant))
      .map((p) => [p.type, Number(p.value)]),
  );
  const asUtc = Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!);
  return {
    year: parts.year!,
    month: parts.month!,
    day: parts.day!,
    minutes: parts.hour! * 60 + parts.minute!,
    offsetMs: asUtc - Math.floor(instant / 1000) * 1000,
  };
}

function minutesOf(hhmm: string): number {
  const [h, m] = hhmm.split(':').map(Number);
  return h! * 60 + m!;
}

/** A local time as if it were UTC: comparable across one zone's readings. */
function wallMs(local: LocalTime): number {
  return Date.UTC(local.year, local.month - 1, local.day, Math.floor(local.minutes / 60), local.minutes % 60);
}

/**
 * The instant a local wall-clock time happens in the zone: the earlier one when a DST change repeats
 * it, the first instant after the gap when a DST change skips it.
 */
function instantOf(local: LocalTime, timezone: string): number {
  const wall = wallMs(local);
  const reads = (instant: number) => wallMs(localTime(instant, timezone));
  // The offsets well before and well after: any change of offset around the time lies between them.
  const candidates = [
    wall - localTime(wall - 86_400_000, timezone).offsetMs,
    wall - localTime(wall + 86_400_000, timezone).offsetMs,
  ].sort((a, b) => a - b);
  const exact = candidates.find((instant) => reads(instant) === wall);
  if (exact !== undefined) return exact;
  // Skipped: the first minute whose local reading is past the wall time.
  let [before, after] = candidates as [number, number];
  while (after - before > 60_000) {
    const middle = before + Math.floor((after - before) / 120_000) * 60_000;
    if (reads(middle) >= wall) after = middle;
    else before = middle;
  }
  return after;
}

/** When the quiet hours that `now` falls in end, or null when `now` is outside them (or they are empty). */
export function quietHoursEnd(now: number, timezone: string, quiet: QuietHours): number | null {
  const start = minutesOf(quiet.start);
  const end = minutesOf(quiet.end);
  if (start === end) return null;
  const local = localTime(now, timezone);
  const inside =
    start < end ? local.minutes >= start && local.minutes < end : local.minutes >= start || local.minutes < end;
  if (!inside) return null;
  // Across midnight and already past the start: the end is tomorrow's.
  const endsTomorrow = start > end && local.minutes >= start;
  const day = new Date(Date.UTC(local.year, local.month - 1, local.day + (endsTomorrow ? 1 : 0)));
  const at = instantOf(
    { year: day.getUTCFullYear(), month: day.getUTCMonth() + 1, day: day.getUTCDate(), minutes: end },
    timezone,
  );
  return at > now ? at : now;
}
