package sqlite

import (
	"github.com/codecell/codecell/memory"

	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/codecell/codecell/tools"
)

// UpsertEntity creates the caller's entity in.Name or updates it, and
// reports whether it was created.
func (s *Store) UpsertEntity(ctx context.Context, in memory.EntityInput) (memory.Entity, bool, error) {
	principal := tools.CallerFrom(ctx).Principal
	in, props, err := memory.PrepareEntity(in, s.lim)
	if err != nil {
		return memory.Entity{}, false, err
	}
	prov, err := memory.Provenance(ctx, in.Provenance, "", s.lim)
	if err != nil {
		return memory.Entity{}, false, err
	}
	var e memory.Entity
	var created bool
	err = s.writeWithin(ctx, principal, func(tx *sql.Tx) error {
		now := s.now().UTC().Truncate(time.Millisecond)
		cur, err := entityByName(ctx, tx, principal, in.Name)
		if err != nil && !errors.Is(err, memory.ErrNotFound) {
			return err
		}
		if errors.Is(err, memory.ErrNotFound) {
			created = true
			res, err := tx.ExecContext(ctx, `INSERT INTO entities (principal, name, type, description, properties, created_at, updated_at, provenance)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, principal, in.Name, in.Type, in.Description, string(props), ms(now), ms(now), provenanceArg(prov))
			if err != nil {
				return fmt.Errorf("create entity: %w", err)
			}
			id, _ := res.LastInsertId()
			e = memory.Entity{ID: id, Name: in.Name, Type: in.Type, Description: in.Description, Properties: props, CreatedAt: now, UpdatedAt: now, Provenance: prov}
			return nil
		}
		if e, err = memory.MergeEntity(cur, in, props, s.lim, now); err != nil {
			return err
		}
		e.Provenance = memory.UnionProvenance(cur.Provenance, prov)
		if _, err := tx.ExecContext(ctx, `UPDATE entities SET type = ?, description = ?, properties = ?, updated_at = ?, provenance = ? WHERE id = ?`,
			e.Type, e.Description, string(e.Properties), ms(now), provenanceArg(e.Provenance), e.ID); err != nil {
			return fmt.Errorf("update entity: %w", err)
		}
		return nil
	})
	if err != nil {
		return memory.Entity{}, false, err
	}
	return e, created, nil
}

const entityColumns = `id, name, type, description, properties, created_at, updated_at, provenance`

func scanEntity(sc interface{ Scan(...any) error }) (memory.Entity, error) {
	var e memory.Entity
	var props string
	var c, u int64
	var prov sql.NullString
	if err := sc.Scan(&e.ID, &e.Name, &e.Type, &e.Description, &props, &c, &u, &prov); err != nil {
		return e, err
	}
	e.Properties, e.Provenance = json.RawMessage(props), provenanceOf(prov)
	e.CreatedAt, e.UpdatedAt = fromMS(c), fromMS(u)
	return e, nil
}

func entityByName(ctx context.Context, q queryer, principal, name string) (memory.Entity, error) {
	e, err := scanEntity(q.QueryRowContext(ctx, `SELECT `+entityColumns+` FROM entities WHERE principal = ? AND name = ? COLLATE NOCASE`, principal, name))
	if errors.Is(err, sql.ErrNoRows) {
		return e, memory.NotFound("entity %q not found", name)
	}
	if err != nil {
		return e, fmt.Errorf("find entity: %w", err)
	}
	return e, nil
}

func entityByID(ctx context.Context, q queryer, id int64) (memory.Entity, error) {
	e, err := scanEntity(q.QueryRowContext(ctx, `SELECT `+entityColumns+` FROM entities WHERE id = ?`, id))
	if err != nil {
		return e, fmt.Errorf("find entity %d: %w", id, err)
	}
	return e, nil
}

// ensureEntity returns the id of the named entity, creating it bare, of
// provenance prov (its name is data of those sources).
func ensureEntity(ctx context.Context, tx *sql.Tx, principal, name string, now time.Time, prov json.RawMessage) (int64, bool, error) {
	var id int64
	err := tx.QueryRowContext(ctx, `SELECT id FROM entities WHERE principal = ? AND name = ? COLLATE NOCASE`, principal, name).Scan(&id)
	if err == nil {
		return id, false, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, false, fmt.Errorf("find entity: %w", err)
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO entities (principal, name, created_at, updated_at, provenance) VALUES (?, ?, ?, ?, ?)`, principal, name, ms(now), ms(now), provenanceArg(prov))
	if err != nil {
		return 0, false, fmt.Errorf("create entity: %w", err)
	}
	id, err = res.LastInsertId()
	return id, true, err
}

func (s *Store) linkEntities(ctx context.Context, tx *sql.Tx, principal string, memoryID int64, names []string, now time.Time) error {
	prov, err := memory.Provenance(ctx, nil, "", s.lim)
	if err != nil {
		return err
	}
	for _, n := range names {
		eid, _, err := ensureEntity(ctx, tx, principal, n, now, prov)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO memory_entities (memory_id, entity_id) VALUES (?, ?)`, memoryID, eid); err != nil {
			return fmt.Errorf("link memory %d to entity %q: %w", memoryID, n, err)
		}
	}
	return nil
}

// Relate records the relation from → to of the given type (one per
// triple: relating again updates weight and properties). Missing entities
// are created.
func (s *Store) Relate(ctx context.Context, in memory.RelateInput) (memory.RelateResult, error) {
	principal := tools.CallerFrom(ctx).Principal
	in, weight, props, err := memory.PrepareRelation(in, s.lim)
	if err != nil {
		return memory.RelateResult{}, err
	}
	prov, err := memory.Provenance(ctx, in.Provenance, "", s.lim)
	if err != nil {
		return memory.RelateResult{}, err
	}
	var res memory.RelateResult
	err = s.writeWithin(ctx, principal, func(tx *sql.Tx) error {
		now := s.now().UTC().Truncate(time.Millisecond)
		from, c1, err := ensureEntity(ctx, tx, principal, in.From, now, prov)
		if err != nil {
			return err
		}
		to, c2, err := ensureEntity(ctx, tx, principal, in.To, now, prov)
		if err != nil {
			return err
		}
		if c1 {
			res.CreatedEntities = append(res.CreatedEntities, in.From)
		}
		if c2 && from != to {
			res.CreatedEntities = append(res.CreatedEntities, in.To)
		}
		var id int64
		var stored sql.NullString
		err = tx.QueryRowContext(ctx, `SELECT id, provenance FROM relations WHERE from_id = ? AND to_id = ? AND type = ?`, from, to, in.Type).Scan(&id, &stored)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			r, err := tx.ExecContext(ctx, `INSERT INTO relations (principal, from_id, to_id, type, weight, properties, created_at, updated_at, provenance)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, principal, from, to, in.Type, weight, string(props), ms(now), ms(now), provenanceArg(prov))
			if err != nil {
				return fmt.Errorf("relate: %w", err)
			}
			id, _ = r.LastInsertId()
			res.Created = true
		case err != nil:
			return fmt.Errorf("relate: %w", err)
		default:
			if _, err := tx.ExecContext(ctx, `UPDATE relations SET weight = ?, properties = ?, updated_at = ?, provenance = ? WHERE id = ?`,
				weight, string(props), ms(now), provenanceArg(memory.UnionProvenance(provenanceOf(stored), prov)), id); err != nil {
				return fmt.Errorf("relate: %w", err)
			}
		}
		res.Relation, err = relationByID(ctx, tx, id)
		return err
	})
	if err != nil {
		return memory.RelateResult{}, err
	}
	return res, nil
}

const relationSelect = `SELECT r.id, f.name, t.name, r.type, r.weight, r.properties, r.created_at, r.updated_at, r.provenance
	FROM relations r JOIN entities f ON f.id = r.from_id JOIN entities t ON t.id = r.to_id`

func scanRelation(sc interface{ Scan(...any) error }) (memory.Relation, error) {
	var r memory.Relation
	var props string
	var c, u int64
	var prov sql.NullString
	if err := sc.Scan(&r.ID, &r.From, &r.To, &r.Type, &r.Weight, &props, &c, &u, &prov); err != nil {
		return r, err
	}
	r.Properties, r.Provenance = json.RawMessage(props), provenanceOf(prov)
	r.CreatedAt, r.UpdatedAt = fromMS(c), fromMS(u)
	return r, nil
}

func relationByID(ctx context.Context, q queryer, id int64) (memory.Relation, error) {
	r, err := scanRelation(q.QueryRowContext(ctx, relationSelect+` WHERE r.id = ?`, id))
	if err != nil {
		return r, fmt.Errorf("read relation: %w", err)
	}
	return r, nil
}

// sqlGraph reads the graph of this store within a transaction.
type sqlGraph struct{ q queryer }

func (g sqlGraph) EntityByID(ctx context.Context, id int64) (memory.Entity, error) {
	return entityByID(ctx, g.q, id)
}

func (g sqlGraph) RelationByID(ctx context.Context, id int64) (memory.Relation, error) {
	return relationByID(ctx, g.q, id)
}

func (g sqlGraph) LinkedMemories(ctx context.Context, entity int64) ([]memory.MemoryLink, error) {
	return linkedMemories(ctx, g.q, entity)
}

func (g sqlGraph) Edges(ctx context.Context, ids []int64, dir memory.Direction, types []string) (map[int64][]memory.Edge, error) {
	return edges(ctx, g.q, ids, dir, types)
}

// edges returns the edges leaving each of ids, following dir and types,
// sorted by (node, next, rel) so that walks are deterministic.
func edges(ctx context.Context, q queryer, ids []int64, dir memory.Direction, types []string) (map[int64][]memory.Edge, error) {
	out := map[int64][]memory.Edge{}
	for start := 0; start < len(ids); start += 400 {
		chunk := ids[start:min(start+400, len(ids))]
		var parts []string
		var args []any
		typeCond := ""
		var typeArgs []any
		if len(types) > 0 {
			typeCond = " AND type IN (" + placeholders(len(types)) + ")"
			for _, t := range types {
				typeArgs = append(typeArgs, t)
			}
		}
		idArgs := make([]any, len(chunk))
		for i, id := range chunk {
			idArgs[i] = id
		}
		if dir == memory.Out || dir == memory.Both {
			parts = append(parts, `SELECT from_id, to_id, id FROM relations WHERE from_id IN (`+placeholders(len(chunk))+`)`+typeCond)
			args = append(append(args, idArgs...), typeArgs...)
		}
		if dir == memory.In || dir == memory.Both {
			parts = append(parts, `SELECT to_id, from_id, id FROM relations WHERE to_id IN (`+placeholders(len(chunk))+`)`+typeCond)
			args = append(append(args, idArgs...), typeArgs...)
		}
		rows, err := q.QueryContext(ctx, strings.Join(parts, " UNION ALL ")+` ORDER BY 1, 2, 3`, args...)
		if err != nil {
			return nil, fmt.Errorf("walk graph: %w", err)
		}
		for rows.Next() {
			var node int64
			var e memory.Edge
			if err := rows.Scan(&node, &e.Next, &e.Rel); err != nil {
				rows.Close()
				return nil, fmt.Errorf("walk graph: %w", err)
			}
			out[node] = append(out[node], e)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Neighbors walks the graph breadth-first from in.Entity up to in.Depth
// edges.
func (s *Store) Neighbors(ctx context.Context, in memory.NeighborsInput) (memory.NeighborsResult, error) {
	principal := tools.CallerFrom(ctx).Principal
	types, err := memory.NormalizeNeighbors(&in)
	if err != nil {
		return memory.NeighborsResult{}, err
	}
	var res memory.NeighborsResult
	err = s.read(ctx, func(tx *sql.Tx) error {
		start, err := entityByName(ctx, tx, principal, strings.TrimSpace(in.Entity))
		if err != nil {
			return err
		}
		res, err = memory.WalkNeighbors(ctx, sqlGraph{tx}, start, in, types)
		return err
	})
	if err != nil {
		return memory.NeighborsResult{}, err
	}
	return res, nil
}

func linkedMemories(ctx context.Context, q queryer, entity int64) ([]memory.MemoryLink, error) {
	rows, err := q.QueryContext(ctx, `SELECT m.id, m.layer, m.content, m.provenance FROM memory_entities me JOIN memories m ON m.id = me.memory_id
		WHERE me.entity_id = ? ORDER BY m.importance DESC, m.id DESC LIMIT ?`, entity, memory.LinkedPerEntity)
	if err != nil {
		return nil, fmt.Errorf("linked memories: %w", err)
	}
	defer rows.Close()
	var out []memory.MemoryLink
	for rows.Next() {
		var l memory.MemoryLink
		var layer string
		var prov sql.NullString
		if err := rows.Scan(&l.ID, &layer, &l.Content, &prov); err != nil {
			return nil, fmt.Errorf("linked memories: %w", err)
		}
		l.Provenance = provenanceOf(prov)
		l.Layer = memory.Layer(layer)
		l.Content = memory.Clip(l.Content, 300)
		out = append(out, l)
	}
	return out, rows.Err()
}

// Path finds a shortest path from in.From to in.To by breadth-first search;
// among paths of equal length it picks the one through the lowest entity
// and relation ids, so the answer is stable.
func (s *Store) Path(ctx context.Context, in memory.PathInput) (memory.PathResult, error) {
	principal := tools.CallerFrom(ctx).Principal
	types, err := memory.NormalizePath(&in)
	if err != nil {
		return memory.PathResult{}, err
	}
	var res memory.PathResult
	err = s.read(ctx, func(tx *sql.Tx) error {
		from, err := entityByName(ctx, tx, principal, strings.TrimSpace(in.From))
		if err != nil {
			return err
		}
		to, err := entityByName(ctx, tx, principal, strings.TrimSpace(in.To))
		if err != nil {
			return err
		}
		res, err = memory.FindPath(ctx, sqlGraph{tx}, from, to, in, types)
		return err
	})
	if err != nil {
		return memory.PathResult{}, err
	}
	return res, nil
}
