// Package automations fires runs from triggers: cron specs with time zones,
// intervals, and monitors that poll files or an HTTP URL. It holds the
// Service the CLI and the MCP adapter share (create, list, update, pause,
// resume, delete, trigger, roll), the Scheduler every mcp-host process
// runs, and Sync, which turns the `on:` triggers of workflow files into
// automations owned by "config".
//
// # Exactly once
//
// A fire is identified by (automation id, nominal time). The store inserts
// the fire row and queues its run in one transaction, refusing a slot that
// was fired before (or that is not after the automation's cursor). Racing
// schedulers can therefore never fire one slot twice; locks/scheduler only
// decides which process tries. Nominal times are computed from stored
// state only (the cursor, the last finish), so every process agrees on
// them. The run engine of any live peer executes the queued run.
//
// # Many fires at one instant
//
// Cron slots are often shared (every minute, every hour on the hour). The
// leader prepares the fires of its next slot shortly before it
// (Config.Ahead): it builds their runs and computes their next due times
// from the automations as it read them. At the slot it commits them in
// slices (Config.FireSlice fires per store.FireMany, two slices in flight
// so the store's writer has the next one queued), each fire checked in the store as
// any fire is, plus that nothing it was prepared from changed
// (store.FireExpect); the pass that follows fires anything a slice could
// not, from a fresh read. So a thousand fires due at one instant cost ten
// transactions, and each is durable as soon as its own slice.
//
// # Triggers
//
//   - cron: robfig/cron syntax through package schedule (DST rules there).
//     Slots late by more than a minute are missed: counted under the
//     missed policy skip, the latest fired once as a catch-up under once.
//   - interval (overlap skip or buffer_one): Every after the previous run
//     settled, seeded from the recorded last finish, so a restart keeps the
//     cadence; while a run is in flight nothing is due, and an overdue tick
//     fires once.
//   - interval with overlap allow: a fixed rate, Every after the previous
//     tick whether or not its run finished; missed ticks are counted, the
//     latest overdue one fires once.
//   - files / http monitors: polled every Every (default 10s / 60s). The
//     first observation after creation, or after the trigger changed, is
//     the baseline and launches nothing. A change is first recorded as a
//     pending launch; the fire that queues its run records the new
//     observation and clears the pending launch in the same transaction.
//     A pending launch whose fire failed, or whose process died, is retried
//     on every poll, under its original nominal time, until handed over.
//
// # Overlap
//
// While an automation's latest run has not settled, a fire is skipped
// (skip, the default; counted), queues another run (allow), or is held
// until the run settles (buffer_one: one held fire, later ones skipped).
// The store decides this inside the fire's transaction from the run's
// stored status, so a manual trigger racing the scheduler obeys it too.
package automations
