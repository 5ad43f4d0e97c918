package memory

type runsData struct{}

func (d *runsData) init() {}

func (d *runsData) count() int { return 0 }
