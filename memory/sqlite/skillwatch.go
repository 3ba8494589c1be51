package sqlite

import (
	"github.com/codecell/codecell/memory"

	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"
)

// skillLogKeep is how many entries of skill_changes Prune keeps.
const skillLogKeep = 1000

// defaultWatchInterval is the default Config.WatchInterval.
const defaultWatchInterval = 250 * time.Millisecond

// skillWatch is a Store's position in skill_changes.
type skillWatch struct {
	mu   sync.Mutex // serializes polls
	last int64      // the last entry read
	stop context.CancelFunc
	done chan struct{}
}

// logSkillChange appends ch, made by this store, to skill_changes.
func (s *Store) logSkillChange(ctx context.Context, tx *sql.Tx, ch memory.SkillChange) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO skill_changes (origin, owner, name, kind, version, at) VALUES (?, ?, ?, ?, ?, ?)`,
		s.origin, ch.Principal, ch.Name, string(ch.Kind), ch.Version, ms(s.now())); err != nil {
		return fmt.Errorf("log skill change: %w", err)
	}
	return nil
}

// startWatch reads the current end of skill_changes and, unless interval
// is negative, starts the watcher goroutine that Close stops.
func (s *Store) startWatch(ctx context.Context, interval time.Duration) error {
	err := s.read(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM skill_changes`).Scan(&s.watch.last)
	})
	if err != nil {
		return fmt.Errorf("watch skills: %w", err)
	}
	if interval < 0 {
		return nil
	}
	if interval == 0 {
		interval = defaultWatchInterval
	}
	wctx, stop := context.WithCancel(context.Background())
	s.watch.stop, s.watch.done = stop, make(chan struct{})
	go func() {
		defer close(s.watch.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-t.C:
			}
			if err := s.pollSkillChanges(wctx); err != nil && wctx.Err() == nil && !errors.Is(err, memory.ErrClosed) {
				s.log.Warn("watch skills", "err", err)
			}
		}
	}()
	return nil
}

// stopWatch stops the watcher goroutine, if any, and waits for it.
func (s *Store) stopWatch() {
	if s.watch.stop != nil {
		s.watch.stop()
		<-s.watch.done
	}
}

// pollSkillChanges delivers the changes that other stores logged since the
// last poll.
func (s *Store) pollSkillChanges(ctx context.Context) error {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	var changes []memory.SkillChange
	var origins []string
	last := s.watch.last
	gap := false
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT seq, origin, owner, name, kind, version FROM skill_changes WHERE seq > ? ORDER BY seq LIMIT 1000`, last)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var seq int64
			var origin, kind string
			var ch memory.SkillChange
			if err := rows.Scan(&seq, &origin, &ch.Principal, &ch.Name, &kind, &ch.Version); err != nil {
				return err
			}
			// Sequence numbers have no holes (AUTOINCREMENT, one writer
			// at a time): a hole is what Prune removed.
			if seq != last+1 && len(changes) == 0 && !gap {
				gap = true
			}
			last = seq
			ch.Kind = memory.SkillChangeKind(kind)
			ch.Deleted = ch.Kind == memory.SkillDeleted || ch.Kind == memory.SkillUnpublished
			ch.Everyone = ch.Kind == memory.SkillPublished || ch.Kind == memory.SkillUnpublished
			changes = append(changes, ch)
			origins = append(origins, origin)
		}
		return rows.Err()
	})
	if err != nil {
		return fmt.Errorf("poll skill changes: %w", err)
	}
	s.watch.last = last
	if gap {
		s.log.Warn("skill changes were missed; reloading every skill", "after", last)
		s.notifySkills(memory.SkillChange{Kind: memory.SkillsReloaded, Everyone: true, Version: changes[len(changes)-1].Version})
		return nil
	}
	for i, ch := range changes {
		if origins[i] != s.origin {
			s.notifySkills(ch)
		}
	}
	return nil
}
