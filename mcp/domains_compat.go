package mcp

import (
	"github.com/cairnhq/cairn/automations"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/sessions"
	"github.com/cairnhq/cairn/store"
)

// The old way to hand the domains to New, kept so that callers build
// while they move over. Deprecated: set Params.Runs, Params.RunStore,
// Params.Sessions and Params.Automations to the domain values.

// RunsParams configure RunsService.
//
// Deprecated: set Params.Runs and Params.RunStore.
type RunsParams struct {
	Engine *runs.Engine
	Store  store.RunStore
}

// RunsService is the engine with its store, for Params.Runs.
//
// Deprecated: set Params.Runs to the engine and Params.RunStore to its
// store.
func RunsService(p RunsParams) runEngine { return engineWithStore{p.Engine, p.Store} }

// engineWithStore is an engine that brings its store along (New takes it
// as Params.RunStore when that is unset).
type engineWithStore struct {
	*runs.Engine
	store.RunStore
}

// SessionsService is m, for Params.Sessions.
//
// Deprecated: set Params.Sessions to m.
func SessionsService(m *sessions.Manager) sessionManager { return m }

// AutomationsService is s, for Params.Automations.
//
// Deprecated: set Params.Automations to s.
func AutomationsService(s *automations.Service) automationService { return s }
