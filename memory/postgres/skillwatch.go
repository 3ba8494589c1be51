package postgres

import (
	"context"
	"time"

	"github.com/codecell/codecell/memory"
)

// listenLoop listens for other instances' skill changes until ctx ends,
// reconnecting after a lost connection; after a reconnect it tells the
// subscribers that anything may have changed (a change with no name).
func (s *Store) listenLoop(ctx context.Context) {
	first := true
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, &first)
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("lost the notification connection; reconnecting", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (s *Store) listenOnce(ctx context.Context, first *bool) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		if *first {
			*first = false
			close(s.listen)
		}
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `LISTEN `+skillsChannel); err != nil {
		conn.Conn().Close(ctx)
		return err
	}
	if *first {
		*first = false
		close(s.listen)
	} else {
		s.notifySkills(memory.SkillChange{Everyone: true})
	}
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			// The connection is in an unknown state: do not return it
			// to the pool as it is.
			conn.Conn().Close(context.Background())
			return err
		}
		if n.Channel == skillsChannel {
			s.skillNotification(n.Payload)
		}
	}
}
