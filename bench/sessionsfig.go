package main

import (
	"context"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/sessions"
	"github.com/cairnhq/cairn/store"
)

// figSessionAppend measures figure 10: one append of one message to a
// session holding 10 messages against one holding 100,000, in one store
// (synchronous=FULL, the default). Each small append goes to its own
// session of 10 messages, so "10 existing" stays 10; the big session grows
// by a few hundred over 100,000, which changes nothing. The two kinds are
// interleaved so that drift hits both alike.
func figSessionAppend(ctx context.Context, b *bench) error {
	big, appends := 100_000, 300
	if b.short {
		big, appends = 2_000, 20
	}
	ratioName := fmt.Sprintf("append at %s / at 10 messages", count(big))
	b.rec.declare(10, ratioName, "×", atMost(1.2))
	w, err := newWorkspace(ctx, b.disk.Dir, "sessions")
	if err != nil {
		return err
	}
	defer w.cleanup()
	st, err := w.openStore(ctx, "FULL")
	if err != nil {
		return err
	}
	defer st.Close()
	m := sessions.New(st, sessions.Options{MemoryDir: w.WS.MemoryDir(), LocksDir: w.WS.LocksDir()})

	t := time.Now()
	if _, _, err := m.Create(ctx, sessions.CreateParams{ID: "big", Title: "big"}); err != nil {
		return err
	}
	for done := 0; done < big; {
		n := min(sessions.MaxAppendMessages, big-done)
		msgs := make([]sessions.MessageInput, n)
		for i := range msgs {
			msgs[i] = sessions.TextMessage(roleOf(done+i), fmt.Sprintf("message %d of the big session: some words an agent would write, a few dozen bytes long.", done+i))
		}
		if _, err := m.Append(ctx, "big", msgs); err != nil {
			return fmt.Errorf("seed big session: %w", err)
		}
		done += n
	}
	smalls := b.reps * appends
	err = parallel(ctx, smalls, 16, func(ctx context.Context, i int) error {
		id := fmt.Sprintf("small-%05d", i)
		if _, _, err := m.Create(ctx, sessions.CreateParams{ID: id}); err != nil {
			return err
		}
		msgs := make([]sessions.MessageInput, 10)
		for j := range msgs {
			msgs[j] = sessions.TextMessage(roleOf(j), fmt.Sprintf("message %d of a small session: some words an agent would write, a few dozen bytes long.", j))
		}
		_, err := m.Append(ctx, id, msgs)
		return err
	})
	if err != nil {
		return fmt.Errorf("seed small sessions: %w", err)
	}
	b.rec.note(10, "Seeded one session of %s messages and %s sessions of 10 in %s; %d appends of each kind per repetition, one at a time, interleaved.", count(big), count(smalls), time.Since(t).Round(time.Millisecond), appends)
	b.logf("fig 10: seeded in %s", time.Since(t).Round(time.Millisecond))

	msg := []sessions.MessageInput{sessions.TextMessage(store.RoleUser, "one more message, appended while the harness measures")}
	for rep := range b.reps {
		var small, large []float64
		for i := range appends {
			if err := ctx.Err(); err != nil {
				return err
			}
			id := fmt.Sprintf("small-%05d", rep*appends+i)
			t := time.Now()
			if _, err := m.Append(ctx, id, msg); err != nil {
				return err
			}
			small = append(small, ms(time.Since(t)))
			t = time.Now()
			if _, err := m.Append(ctx, "big", msg); err != nil {
				return err
			}
			large = append(large, ms(time.Since(t)))
		}
		s, l := percentile(small, 50), percentile(large, 50)
		b.rec.add(10, "one append to a session of 10 messages (p50)", "ms", goal{}, s)
		b.rec.add(10, fmt.Sprintf("one append to the big session, %s messages (p50)", count(big)), "ms", goal{}, l)
		b.rec.add(10, ratioName, "×", atMost(1.2), l/s)
		b.logf("fig 10: rep %d: at 10: %.3f ms, at %d: %.3f ms (%.2f×)", rep+1, s, big, l, l/s)
	}
	return nil
}

func roleOf(i int) store.Role {
	if i%2 == 0 {
		return store.RoleUser
	}
	return store.RoleAssistant
}
