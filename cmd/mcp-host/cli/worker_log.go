package cli

import (
	"log/slog"
	"os"

	"github.com/cairnhq/cairn/internal/logfile"
)

// useWorkerLog points e.log at the workspace's worker.log (rotated at
// logfile.DefaultCap into worker.log.1) at info or --log-level, whichever
// says more, so a worker leaves a record of the runs it executes and the
// fires it makes; stderr keeps --log-level, unless stderr is worker.log
// already (a worker started in the background). The returned func closes
// the log.
func (e *env) useWorkerLog() (func(), error) {
	ws, err := e.workspace()
	if err != nil {
		return nil, err
	}
	if err := ws.Prepare(); err != nil {
		return nil, err
	}
	f, err := logfile.Open(ws.LogPath(), logfile.DefaultCap)
	if err != nil {
		return nil, err
	}
	var level slog.Level
	_ = level.UnmarshalText([]byte(e.logLevel)) // checked by setup
	file := slog.NewTextHandler(f, &slog.HandlerOptions{Level: min(level, slog.LevelInfo)})
	var h slog.Handler = file
	if out, ok := e.stdio.Err.(*os.File); !ok || !logfile.Same(out, ws.LogPath()) {
		h = slog.NewMultiHandler(file, slog.NewTextHandler(e.stdio.Err, &slog.HandlerOptions{Level: level}))
	} else {
		f.Follow(out) // a panic after a rotation lands in the current log
	}
	e.log = slog.New(h)
	return func() { f.Close() }, nil
}
