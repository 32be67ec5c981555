// Quiet hours against the real time zone database: windows across midnight, and nights in which the
// clocks change (US and EU daylight saving time, both ways).
import { describe, expect, it } from 'vitest';
import { quietHoursEnd } from '../../server/delivery/quiet-hours.ts';

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

describe('quietHoursEnd', () => {
  const night = { start: '22:00', end: '07:00' };

  it('is null outside the window and the local end inside it, across midnight', () => {
    // Berlin in winter is UTC+1.
    expect(quietHoursEnd(at('2027-01-15T12:00:00Z'), 'Europe/Berlin', night)).toBeNull();
    expect(iso(quietHoursEnd(at('2027-01-15T21:30:00Z'), 'Europe/Berlin', night))).toBe('2027-01-16T06:00:00.000Z'); // 22:30 local
    expect(iso(quietHoursEnd(at('2027-01-16T02:00:00Z'), 'Europe/Berlin', night))).toBe('2027-01-16T06:00:00.000Z'); // 03:00 local
    expect(quietHoursEnd(at('2027-01-16T06:00:00Z'), 'Europe/Berlin', night)).toBeNull(); // 07:00 local: over
    expect(iso(quietHoursEnd(at('2027-01-15T21:00:00Z'), 'Europe/Berlin', night))).toBe('2027-01-16T06:00:00.000Z'); // 22:00 sharp
  });

  it('handles a window within one day', () => {
    const lunch = { start: '12:00', end: '13:30' };
    expect(iso(quietHoursEnd(at('2027-06-01T10:15:00Z'), 'Europe/Berlin', lunch))).toBe('2027-06-01T11:30:00.000Z'); // 12:15 CEST
    expect(quietHoursEnd(at('2027-06-01T11:30:00Z'), 'Europe/Berlin', lunch)).toBeNull();
  });

  it('ends at the local end time on the night the clocks go forward (New York, 14 March 2027)', () => {
    // 23:00 EST on the 13th = 04:00Z on the 14th; 07:00 EDT on the 14th = 11:00Z (not 12:00Z as in winter).
    expect(iso(quietHoursEnd(at('2027-03-14T04:00:00Z'), 'America/New_York', night))).toBe('2027-03-14T11:00:00.000Z');
    // 01:30 EST, before the change at 02:00.
    expect(iso(quietHoursEnd(at('2027-03-14T06:30:00Z'), 'America/New_York', night))).toBe('2027-03-14T11:00:00.000Z');
  });

  it('ends at the local end time on the night the clocks go back (Berlin, 31 October 2027)', () => {
    // 23:00 CEST on the 30th = 21:00Z; 07:00 CET on the 31st = 06:00Z (not 05:00Z as in summer).
    expect(iso(quietHoursEnd(at('2027-10-30T21:00:00Z'), 'Europe/Berlin', night))).toBe('2027-10-31T06:00:00.000Z');
    // The repeated hour: 02:30 happens twice (00:30Z and 01:30Z); both are inside.
    expect(iso(quietHoursEnd(at('2027-10-31T00:30:00Z'), 'Europe/Berlin', night))).toBe('2027-10-31T06:00:00.000Z');
    expect(iso(quietHoursEnd(at('2027-10-31T01:30:00Z'), 'Europe/Berlin', night))).toBe('2027-10-31T06:00:00.000Z');
  });

  it('an end inside the skipped hour falls after the gap', () => {
    // New York skips 02:00-03:00 on 14 March 2027: quiet hours ending at 02:30 end at 03:00 EDT (07:00Z).
    expect(iso(quietHoursEnd(at('2027-03-14T06:00:00Z'), 'America/New_York', { start: '23:00', end: '02:30' }))).toBe(
      '2027-03-14T07:00:00.000Z',
    );
  });

  it('reads other zones, including half-hour offsets', () => {
    // Kolkata is UTC+5:30 all year: 23:00 local = 17:30Z; 07:00 local = 01:30Z.
    expect(iso(quietHoursEnd(at('2027-01-15T17:30:00Z'), 'Asia/Kolkata', night))).toBe('2027-01-16T01:30:00.000Z');
  });
});
