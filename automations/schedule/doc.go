// Package schedule is the pure schedule maths behind automations: cron
// specs with time zones, intervals measured from completion, and the
// missed-run policy. It does no I/O beyond loading zone data, keeps no state
// and never reads the clock: every function takes the instants it needs, so
// the scheduler can call it on each wake-up and tests can use fixed instants.
//
// # Cron
//
// [ParseCron] accepts the standard five fields (minute hour day-of-month
// month day-of-week, as parsed by github.com/robfig/cron/v3) or one of the
// descriptors @yearly (@annually), @monthly, @weekly, @daily (@midnight) and
// @hourly. "@every" is refused: intervals are their own trigger kind (see
// [ParseEvery]). Day-of-week runs 0-6 (Sunday is 0; 7 is refused) or sun-sat.
// The two day fields combine as robfig/cron's dayMatches does: a field is
// unrestricted when it is "*" or "?", alone or with a step of 1 ("*/1"),
// and then a day must match both fields (AND, so the other field alone
// decides); when both are restricted, a day matches either (OR). A step
// over 1 on a star, "*/N", makes the field restricted (robfig's parser
// drops its star mark), unlike Vixie cron, where any field starting with
// "*" is a star: "0 0 */2 * 1" fires on every odd day of the month and
// every Monday (OR), "0 0 */2 * *" on odd days, "0 0 */1 * 1" on Mondays.
//
// The zone is an IANA name given as the tz argument or as a "CRON_TZ=Zone " or
// "TZ=Zone " prefix of the expression (both may be given if they agree); no
// zone means the machine's zone, [time.Local]. Input is at most [MaxCronLen]
// bytes of printable ASCII. A spec that matches no date at all (0 0 30 2 *)
// is refused with [ErrNeverFires], an unknown zone with [ErrUnknownZone], any
// other defect with [ErrInvalidCron]. ParseCron never panics.
//
// # Daylight saving time
//
// A spec names wall-clock slots in its zone; [Cron.Next] turns each slot into
// one instant, by these rules:
//
//   - A slot that exists once fires at that instant.
//   - A slot inside a skipped interval (spring forward: 02:30 on 2026-03-08 in
//     America/New_York, 02:15 on 2026-10-04 in Australia/Lord_Howe) fires at
//     the transition, the first instant after the gap (03:00 EDT; 02:30
//     +11:00). Several slots in one gap collapse into that one instant, so
//     "0,30 2 * * *" fires once at 03:00 on that day.
//   - A slot in a repeated interval (fall back: 01:30 on 2026-11-01 in
//     America/New_York) fires once, at its first occurrence (01:30 EDT).
//     Each wall-clock slot fires at most once, hourly specs included: on
//     that day "30 * * * *" fires at 00:30 EDT, 01:30 EDT and 02:30 EST,
//     and "* * * * *" is silent during the repeated hour (01:00 EST to
//     01:59 EST), whose slots already fired an hour before.
//
// Instants therefore always move forward and no slot is fired twice, whatever
// the offsets (Lord_Howe's 30-minute shift, Troll's two hours, a skipped
// midnight). Next returns times in the automation's zone, and the zero time
// when the spec has no slot within five years of its argument.
//
// # Missed runs
//
// [Due] is called on each wake-up with the last slot already accounted for.
// A slot late by at most the grace (default [DefaultGrace]) fires. Older
// slots are missed: under [MissedSkip] they are only counted; under
// [MissedOnce] the latest of them fires as one catch-up and the rest are
// counted. At most one slot fires per call, so missed slots never queue.
//
// # Intervals
//
// [NextInterval] measures a tick from the previous completion (the recorded
// last finish, else the creation time), so a restart with the same records
// keeps the cadence; while a run is in flight there is no next tick. An
// overdue tick is due now and fires once; the one after it is measured from
// that run's completion.
//
// # Nominal times
//
// A fire is identified by (automation id, nominal time), so nominal times are
// deterministic: [Due] and [NextInterval] return them in UTC, in whole
// seconds ([NextInterval] rounds up, so a tick never comes before its
// interval has elapsed), computed only from their inputs (never from "now" unless the
// inputs say so), so racing schedulers agree on them.
package schedule
