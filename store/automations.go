package store

// AutomationStore keeps automations, their fires and history.
type AutomationStore interface{}
