package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// What an operator and the server's housekeeping use: listings of the
// audit log and of stored results, retention, statistics of the whole
// database, as memory/audit.go, results.go, retention.go and stats.go
// provide them on SQLite.

// codeLogKeep is how many entries of memory_code_log Prune keeps: more
// than codeLogCatchUp, so that an instance that is within catching-up
// distance of the head still finds every entry it lacks, and one further
// behind reloads its code sets.
const codeLogKeep = 2 * codeLogCatchUp

const executionColumns = `id, principal, session, language, %s, code_hash, status, error_kind, error_message,
	duration_us, tool_calls, result_bytes, toolset, toolset_description, started_at, updated_at, mode, plan_hash`

func scanExecution(sc interface{ Scan(...any) error }) (memory.Execution, error) {
	var e memory.Execution
	var dur, started, updated int64
	err := sc.Scan(&e.ID, &e.Principal, &e.Session, &e.Language, &e.Code, &e.CodeHash, &e.Status, &e.ErrorKind, &e.ErrorMessage,
		&dur, &e.ToolCalls, &e.ResultBytes, &e.Toolset, &e.ToolsetDescription, &started, &updated, &e.Mode, &e.PlanHash)
	e.Duration, e.StartedAt, e.UpdatedAt = time.Duration(dur)*time.Microsecond, fromMS(started), fromMS(updated)
	return e, err
}

// toolCallColumns are the columns scanToolCall reads, in order; cached
// and planned are stored as 0 or 1.
const toolCallColumns = `id, execution_id, tool, args_hash, status, error_code, duration_us, started_at, cached <> 0, planned <> 0`

func scanToolCall(r pgx.CollectableRow) (memory.ToolCall, error) {
	var c memory.ToolCall
	var d, at int64
	err := r.Scan(&c.ID, &c.ExecutionID, &c.Tool, &c.ArgsHash, &c.Status, &c.ErrorCode, &d, &at, &c.Cached, &c.Planned)
	c.Duration, c.StartedAt = time.Duration(d)*time.Microsecond, fromMS(at)
	return c, err
}

// flag is a boolean as the store keeps it, 0 or 1 as on SQLite.
func flag(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// args collects the parameters of a query and numbers their placeholders.
type args []any

func (a *args) p(v any) string {
	*a = append(*a, v)
	return fmt.Sprintf("$%d", len(*a))
}

// ListExecutions returns audit records, newest first.
func (s *Store) ListExecutions(ctx context.Context, q memory.ExecutionQuery) ([]memory.Execution, error) {
	if q.Limit <= 0 {
		q.Limit = 50
	}
	q.Limit = min(q.Limit, 1000)
	var a args
	conds := []string{"true"}
	if q.Principal != nil {
		conds = append(conds, "principal = "+a.p(*q.Principal))
	}
	if q.Session != "" {
		conds = append(conds, "session = "+a.p(q.Session))
	}
	if q.Status != "" {
		conds = append(conds, "status = "+a.p(q.Status))
	}
	if q.CodeHash != "" {
		conds = append(conds, "code_hash = "+a.p(q.CodeHash))
	}
	if !q.Since.IsZero() {
		conds = append(conds, "started_at >= "+a.p(ms(q.Since)))
	}
	if !q.Until.IsZero() {
		conds = append(conds, "started_at < "+a.p(ms(q.Until)))
	}
	if q.Before != nil {
		at := a.p(ms(q.Before.StartedAt))
		conds = append(conds, "(started_at < "+at+" OR (started_at = "+at+" AND id < "+a.p(q.Before.ID)+"))")
	}
	code := "''"
	if q.WithCode {
		code = "code"
	}
	rows, err := s.pool.Query(ctx, `SELECT `+fmt.Sprintf(executionColumns, code)+` FROM executions WHERE `+strings.Join(conds, " AND ")+
		` ORDER BY started_at DESC, id COLLATE "C" DESC LIMIT `+a.p(q.Limit), a...)
	if err != nil {
		return nil, fmt.Errorf("list executions: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (memory.Execution, error) { return scanExecution(r) })
	if err != nil {
		return nil, fmt.Errorf("list executions: %w", err)
	}
	if out == nil {
		out = []memory.Execution{}
	}
	return out, nil
}

// ListToolCalls returns tool-call records, newest first.
func (s *Store) ListToolCalls(ctx context.Context, q memory.ToolCallQuery) ([]memory.ToolCall, error) {
	if q.Limit <= 0 {
		q.Limit = 100
	}
	q.Limit = min(q.Limit, 1000)
	var a args
	conds := []string{"true"}
	if q.Tool != "" {
		conds = append(conds, "tool = "+a.p(q.Tool))
	}
	if q.Status != "" {
		conds = append(conds, "status = "+a.p(q.Status))
	}
	if !q.Since.IsZero() {
		conds = append(conds, "started_at >= "+a.p(ms(q.Since)))
	}
	rows, err := s.pool.Query(ctx, `SELECT `+toolCallColumns+` FROM tool_calls
		WHERE `+strings.Join(conds, " AND ")+` ORDER BY started_at DESC, id DESC LIMIT `+a.p(q.Limit), a...)
	if err != nil {
		return nil, fmt.Errorf("list tool calls: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanToolCall)
	if err != nil {
		return nil, fmt.Errorf("list tool calls: %w", err)
	}
	if out == nil {
		out = []memory.ToolCall{}
	}
	return out, nil
}

const resultColumns = `id, principal, session, execution_id, content_type, size, stored_size, sha256, created_at, provenance`

func scanResult(sc interface{ Scan(...any) error }) (memory.ResultInfo, error) {
	var r memory.ResultInfo
	var at int64
	var prov *string
	err := sc.Scan(&r.ID, &r.Principal, &r.Session, &r.ExecutionID, &r.ContentType, &r.Size, &r.StoredSize, &r.SHA256, &at, &prov)
	r.CreatedAt, r.Provenance = fromMS(at), provOf(prov)
	return r, err
}

func resultNotFound(id string) error {
	return memory.NotFound("result %q not found (results expire; run the code again to recreate it)", memory.Clip(id, 40))
}

// StatResult describes the caller's result id without reading it.
func (s *Store) StatResult(ctx context.Context, id string) (memory.ResultInfo, error) {
	principal := tools.CallerFrom(ctx).Principal
	r, err := scanResult(s.pool.QueryRow(ctx, `SELECT `+resultColumns+` FROM results WHERE id = $1 AND principal = $2`, id, principal))
	if errors.Is(err, pgx.ErrNoRows) {
		return memory.ResultInfo{}, resultNotFound(id)
	}
	if err != nil {
		return memory.ResultInfo{}, fmt.Errorf("stat result %s: %w", id, err)
	}
	return r, nil
}

// ReadResult returns bytes [offset, offset+length) of the caller's result,
// decompressed (fewer at the end; none past it), for paging. A negative
// length means to the end.
func (s *Store) ReadResult(ctx context.Context, id string, offset, length int64) (memory.ResultInfo, []byte, error) {
	if offset < 0 {
		return memory.ResultInfo{}, nil, memory.Invalid("offset is %d; it must be 0 or more", offset)
	}
	r, data, err := s.GetResult(ctx, id)
	if err != nil {
		return memory.ResultInfo{}, nil, err
	}
	if offset >= int64(len(data)) {
		return r, []byte{}, nil
	}
	end := int64(len(data))
	if length >= 0 && offset+length < end {
		end = offset + length
	}
	return r, data[offset:end], nil
}

// ListResults returns the caller's results, newest first; session, if
// not empty, selects one session's.
func (s *Store) ListResults(ctx context.Context, session string, limit int) ([]memory.ResultInfo, error) {
	principal := tools.CallerFrom(ctx).Principal
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	a := args{principal}
	q := `SELECT ` + resultColumns + ` FROM results WHERE principal = $1`
	if session != "" {
		q += ` AND session = ` + a.p(session)
	}
	rows, err := s.pool.Query(ctx, q+` ORDER BY created_at DESC, id COLLATE "C" LIMIT `+a.p(limit), a...)
	if err != nil {
		return nil, fmt.Errorf("list results: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (memory.ResultInfo, error) { return scanResult(r) })
	if err != nil {
		return nil, fmt.Errorf("list results: %w", err)
	}
	if out == nil {
		out = []memory.ResultInfo{}
	}
	return out, nil
}

// DeleteResult deletes the caller's result id.
func (s *Store) DeleteResult(ctx context.Context, id string) error {
	principal := tools.CallerFrom(ctx).Principal
	tag, err := s.pool.Exec(ctx, `DELETE FROM results WHERE id = $1 AND principal = $2`, id, principal)
	if err != nil {
		return fmt.Errorf("delete result: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return memory.NotFound("result %q not found", memory.Clip(id, 40))
	}
	return nil
}

// Prune enforces Config.Retention as sqlite.Store.Prune does: audit
// records (with their tool calls) and stored results too old or beyond
// the row and byte limits, oldest first, and episodic memories older than
// EpisodicMaxAge, expired cache entries, plans expired before a commit
// and claimed plans older than the audit log's age limit; it also trims
// the change log of binary codes to its latest codeLogKeep entries. Every instance may call it: it runs in one
// transaction, and two at once only delete what the other left.
func (s *Store) Prune(ctx context.Context) (memory.PruneReport, error) {
	var rep memory.PruneReport
	now := s.now()
	r := s.ret
	err := s.tx(ctx, func(tx pgx.Tx) error {
		rep = memory.PruneReport{}
		exec := func(n *int64, q string, args ...any) error {
			tag, err := tx.Exec(ctx, q, args...)
			*n += tag.RowsAffected()
			return err
		}
		if r.ExecutionsMaxAge > 0 {
			if err := exec(&rep.Executions, `DELETE FROM executions WHERE started_at < $1`, ms(now.Add(-r.ExecutionsMaxAge))); err != nil {
				return err
			}
		}
		if r.ExecutionsMaxRows > 0 {
			if err := exec(&rep.Executions, `DELETE FROM executions WHERE id IN
				(SELECT id FROM executions ORDER BY started_at DESC, id COLLATE "C" DESC OFFSET $1)`, r.ExecutionsMaxRows); err != nil {
				return err
			}
		}
		if r.ResultsMaxAge > 0 {
			if err := exec(&rep.Results, `DELETE FROM results WHERE created_at < $1`, ms(now.Add(-r.ResultsMaxAge))); err != nil {
				return err
			}
		}
		if r.ResultsMaxRows > 0 {
			if err := exec(&rep.Results, `DELETE FROM results WHERE id IN
				(SELECT id FROM results ORDER BY created_at DESC, id COLLATE "C" DESC OFFSET $1)`, r.ResultsMaxRows); err != nil {
				return err
			}
		}
		if r.ResultsMaxBytes > 0 {
			if err := exec(&rep.Results, `DELETE FROM results WHERE id IN (SELECT id FROM
				(SELECT id, sum(stored_size) OVER (ORDER BY created_at DESC, id COLLATE "C" DESC) AS total FROM results) t WHERE total > $1)`, r.ResultsMaxBytes); err != nil {
				return err
			}
		}
		if err := exec(&rep.Cache, `DELETE FROM cache_entries WHERE expires_at <= $1`, ms(now)); err != nil {
			return err
		}
		if err := exec(&rep.Plans, `DELETE FROM plans WHERE (state = $1 AND expires_at <= $2) OR (state <> $1 AND created_at < $3)`,
			memory.PlanPlanned, ms(now), ms(now.Add(-memory.KeepPlans(r)))); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM memory_code_log WHERE seq <= (SELECT max(seq) FROM memory_code_log) - $1`, codeLogKeep); err != nil {
			return err
		}
		if r.EpisodicMaxAge <= 0 {
			return nil
		}
		rows, err := tx.Query(ctx, `SELECT principal, array_agg(id ORDER BY id) FROM memories WHERE layer = 'episodic'
			AND coalesce(occurred_at, created_at) < $1 GROUP BY principal ORDER BY principal`, ms(now.Add(-r.EpisodicMaxAge)))
		if err != nil {
			return err
		}
		type old struct {
			principal string
			ids       []int64
		}
		olds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (old, error) {
			var o old
			err := r.Scan(&o.principal, &o.ids)
			return o, err
		})
		if err != nil || len(olds) == 0 {
			return err
		}
		if err := lockCodes(ctx, tx); err != nil {
			return err
		}
		for _, o := range olds {
			if err := deleteMemories(ctx, tx, o.principal, o.ids); err != nil {
				return err
			}
			rep.Episodic += int64(len(o.ids))
		}
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("prune: %w", err)
	}
	if rep.Executions+rep.Results+rep.Episodic > 0 {
		s.log.Info("pruned", "executions", rep.Executions, "results", rep.Results, "episodic", rep.Episodic)
	}
	return rep, nil
}

// EmbedderStatus reports the configured and the stored embedder; its
// error wraps memory.ErrEmbedderMismatch when they differ.
func (s *Store) EmbedderStatus(ctx context.Context) (memory.EmbedderStatus, error) {
	s.vmu.RLock()
	st := memory.EmbedderStatus{Name: s.emb.Name(), Dimensions: s.emb.Dimensions()}
	vecErr := s.vecErr
	s.vmu.RUnlock()
	var stored string
	if err := s.pool.QueryRow(ctx, `SELECT coalesce((SELECT value FROM meta WHERE key = 'embedder'), '')`).Scan(&stored); err != nil {
		return st, fmt.Errorf("embedder status: %w", err)
	}
	if i := strings.LastIndexByte(stored, '/'); i >= 0 {
		st.Stored = stored[:i]
		fmt.Sscan(stored[i+1:], &st.StoredDimensions)
	}
	if vecErr != nil {
		st.Error = vecErr.Error()
	}
	return st, vecErr
}

// Stats returns statistics of the whole database, every principal
// included. Path names the database (host, port, database name; never
// credentials) and FileBytes is its size on disk.
func (s *Store) Stats(ctx context.Context) (memory.StoreStats, error) {
	cc := s.pool.Config().ConnConfig
	st := memory.StoreStats{Path: fmt.Sprintf("postgres://%s:%d/%s", cc.Host, cc.Port, cc.Database), Layers: map[memory.Layer]int{}}
	for _, l := range memory.Layers {
		st.Layers[l] = 0
	}
	st.Embedder, _ = s.EmbedderStatus(ctx)
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		var err error
		if st.Memories, err = countLayers(ctx, tx, st.Layers, ``); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT pg_database_size(current_database()), (SELECT coalesce(max(version), 0) FROM schema_migrations),
			(SELECT count(*) FROM (SELECT principal FROM memories UNION SELECT principal FROM entities UNION SELECT principal FROM workspace_files
				UNION SELECT principal FROM skills UNION SELECT owner FROM published_skills UNION SELECT principal FROM results
				UNION SELECT principal FROM executions) p),
			(SELECT count(*) FROM entities), (SELECT count(*) FROM relations), (SELECT count(*) FROM executions), (SELECT count(*) FROM tool_calls),
			(SELECT count(*) FROM skills), (SELECT count(*) FROM published_skills),
			(SELECT count(*) FROM results), (SELECT coalesce(sum(stored_size), 0) FROM results),
			(SELECT count(*) FROM workspace_files), (SELECT coalesce(sum(size), 0) FROM workspace_files)`).Scan(
			&st.FileBytes, &st.SchemaVersion, &st.Principals, &st.Entities, &st.Relations, &st.Executions, &st.ToolCalls,
			&st.Skills, &st.PublishedSkills, &st.Results, &st.ResultBytes, &st.Files, &st.FileBytesRaw)
	})
	if err != nil {
		return memory.StoreStats{}, fmt.Errorf("stats: %w", err)
	}
	return st, nil
}

// Reindex rebuilds every memory's vector and binary code with e and makes
// e the database's embedder, in one transaction: on failure (the embedder
// is down, returns vectors of the wrong size, ctx ends) nothing changes.
// This instance's memory operations wait while it runs; other instances
// configured with e resume their memory operations once it commits, and
// those still configured with the old embedder fail theirs from then on
// (they check the database when they next start or reindex).
func (s *Store) Reindex(ctx context.Context, e memory.Embedder) (memory.ReindexReport, error) {
	start := time.Now()
	if e == nil {
		return memory.ReindexReport{}, fmt.Errorf("reindex: %w: no embedder", memory.ErrInvalid)
	}
	if err := memory.CheckEmbedder(e); err != nil {
		return memory.ReindexReport{}, fmt.Errorf("reindex: %w", err)
	}
	s.vmu.Lock()
	defer s.vmu.Unlock()
	rep := memory.ReindexReport{Embedder: e.Name(), Dimensions: e.Dimensions()}
	quant := memory.NewQuantizer(e.Dimensions())
	oldEmb, oldQuant, oldFill := s.emb, s.quant, s.fillEmb
	s.emb, s.quant = e, quant // putVector codes with the new quantizer
	err := s.tx(ctx, func(tx pgx.Tx) error {
		rep.Memories = 0
		if err := lockCodes(ctx, tx); err != nil {
			return err
		}
		// pgvector's column has the embedder's dimensions: made again,
		// filled by putVector, indexed at the end.
		_, had, err := embeddingDims(ctx, tx)
		if err != nil {
			return err
		}
		s.fillEmb = had || s.pgv
		if s.fillEmb {
			if _, err := tx.Exec(ctx, `DROP TABLE IF EXISTS memory_embeddings`); err != nil {
				return fmt.Errorf("drop embeddings: %w", err)
			}
			if err := createEmbeddings(ctx, tx, e.Dimensions()); err != nil {
				return err
			}
		}
		var prev string
		if err := tx.QueryRow(ctx, `SELECT coalesce((SELECT value FROM meta WHERE key = 'embedder'), '')`).Scan(&prev); err != nil {
			return err
		}
		rep.Previous, _, _ = strings.Cut(prev, "/")
		const batch = 256
		var after int64
		for {
			rows, err := tx.Query(ctx, `SELECT id, principal, layer, content, tags FROM memories WHERE id > $1 ORDER BY id LIMIT $2`, after, batch)
			if err != nil {
				return fmt.Errorf("read memories: %w", err)
			}
			type item struct {
				id               int64
				principal, layer string
				text             string
			}
			items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (item, error) {
				var it item
				var content, tags string
				err := r.Scan(&it.id, &it.principal, &it.layer, &content, &tags)
				it.text = memory.EmbedText(content, memory.DecodeTags(tags))
				return it, err
			})
			if err != nil {
				return fmt.Errorf("read memories: %w", err)
			}
			if len(items) == 0 {
				break
			}
			texts := make([]string, len(items))
			for i, it := range items {
				texts[i] = it.text
			}
			vs, err := memory.Embed(ctx, e, texts)
			if err != nil {
				return err
			}
			for i, it := range items {
				if err := s.putVector(ctx, tx, it.id, it.principal, memory.Layer(it.layer), vs[i]); err != nil {
					return err
				}
			}
			rep.Memories += len(items)
			after = items[len(items)-1].id
		}
		if s.fillEmb {
			if err := buildIndex(ctx, tx); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `INSERT INTO meta (key, value) VALUES ('embedder', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
			fmt.Sprintf("%s/%d", e.Name(), e.Dimensions()))
		return err
	})
	if err != nil {
		s.emb, s.quant, s.fillEmb = oldEmb, oldQuant, oldFill
		return rep, toolOr("reindex", err)
	}
	s.vecErr = nil
	s.codes.reset(quant)
	rep.Duration = time.Since(start)
	s.log.Info("reindexed", "memories", rep.Memories, "embedder", rep.Embedder, "dims", rep.Dimensions, "previous", rep.Previous, "duration", rep.Duration)
	return rep, nil
}
