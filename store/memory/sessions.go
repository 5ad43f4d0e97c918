package memory

type sessionsData struct{}

func (d *sessionsData) init() {}

func (d *sessionsData) count() int { return 0 }
