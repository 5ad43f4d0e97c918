// Package policy holds the rules an automation's fire and record follow,
// as pure functions over the records a store backend loaded inside its
// write: PlanFire decides what a fire does (queue, skip, buffer, refuse),
// ApplyRecord and ApplyUpdate compute an automation's next state and spec,
// PlanRecord adds the pause of an automation whose fires keep failing,
// PrepareNew fills a new automation's defaults.
//
// Every backend (store/sqlite, store/memory) calls these and only persists
// what they return, so the backends cannot drift apart; the conformance
// suite store/storetest checks storage, the tests here check the rules.
// The package imports store for its record types and automations/schedule
// for the missed-run policies, and nothing that does I/O.
package policy
