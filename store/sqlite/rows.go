package sqlite

import (
	"context"
	"database/sql"
	"strings"
)

// rowsStmt is a statement over a list of rows, "<head>(?,?),(?,?)<tail>",
// prepared for each of rowsChunks rows.
type rowsStmt struct {
	width int
	q     map[int]string // by row count
}

// rowsChunks are the row counts a rowsStmt is prepared for, largest
// first; the last must be 1.
var rowsChunks = []int{64, 8, 1}

// preparedRows declares a rowsStmt whose rows have width values.
func preparedRows(head string, width int, tail string) rowsStmt {
	row := "(?" + strings.Repeat(",?", width-1) + ")"
	st := rowsStmt{width: width, q: make(map[int]string, len(rowsChunks))}
	for _, n := range rowsChunks {
		st.q[n] = prepared(head + row + strings.Repeat(","+row, n-1) + tail)
	}
	return st
}

// execRows runs st over args (width values per row, in order), as few
// statements as the chunk sizes allow, and returns the rows affected.
func (s *Store) execRows(ctx context.Context, tx *sql.Tx, st rowsStmt, args []any) (int64, error) {
	var total int64
	for len(args) > 0 {
		rows := len(args) / st.width
		n := rowsChunks[len(rowsChunks)-1]
		for _, c := range rowsChunks {
			if c <= rows {
				n = c
				break
			}
		}
		res, err := s.exec(ctx, tx, st.q[n], args[:n*st.width]...)
		if err != nil {
			return total, err
		}
		k, err := res.RowsAffected()
		if err != nil {
			return total, err
		}
		total += k
		args = args[n*st.width:]
	}
	return total, nil
}
