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

// The knowledge graph, as memory/graph.go keeps it: the checks and the
// walks are package memory's (WalkNeighbors, FindPath), the SQL is here.

const entityColumns = `id, name, type, description, properties, created_at, updated_at, provenance`

func scanEntity(sc interface{ Scan(...any) error }) (memory.Entity, error) {
	var e memory.Entity
	var props string
	var c, u int64
	var prov *string
	if err := sc.Scan(&e.ID, &e.Name, &e.Type, &e.Description, &props, &c, &u, &prov); err != nil {
		return e, err
	}
	e.Properties, e.Provenance = []byte(props), provOf(prov)
	e.CreatedAt, e.UpdatedAt = fromMS(c), fromMS(u)
	return e, nil
}

func entityByName(ctx context.Context, q querier, principal, name string) (memory.Entity, error) {
	e, err := scanEntity(q.QueryRow(ctx, `SELECT `+entityColumns+` FROM entities WHERE principal = $1 AND lower(name) = lower($2)`, principal, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return e, memory.NotFound("entity %q not found", name)
	}
	if err != nil {
		return e, fmt.Errorf("find entity: %w", err)
	}
	return e, nil
}

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
	err = s.txWithin(ctx, principal, func(tx pgx.Tx) error {
		now := s.now().UTC().Truncate(time.Millisecond)
		// Create it bare if missing, then lock it: two instances
		// upserting the same name meet on the unique index.
		id, c, err := ensureEntity(ctx, tx, principal, in.Name, now, prov)
		if err != nil {
			return err
		}
		cur, err := scanEntity(tx.QueryRow(ctx, `SELECT `+entityColumns+` FROM entities WHERE id = $1 FOR UPDATE`, id))
		if err != nil {
			return fmt.Errorf("find entity: %w", err)
		}
		if created = c; created {
			cur.Name = in.Name
		}
		if e, err = memory.MergeEntity(cur, in, props, s.lim, now); err != nil {
			return err
		}
		if created {
			e.Properties = props
		}
		e.Provenance = memory.UnionProvenance(cur.Provenance, prov)
		_, err = tx.Exec(ctx, `UPDATE entities SET type = $1, description = $2, properties = $3, updated_at = $4, provenance = $5 WHERE id = $6`,
			e.Type, e.Description, string(e.Properties), ms(now), provArg(e.Provenance), e.ID)
		return err
	})
	if err != nil {
		var te *tools.Error
		if errors.As(err, &te) {
			return memory.Entity{}, false, te
		}
		return memory.Entity{}, false, fmt.Errorf("upsert entity: %w", err)
	}
	return e, created, nil
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
	err = s.txWithin(ctx, principal, func(tx pgx.Tx) error {
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
		var stored *string
		// An update returns the row's provenance as it was: the new one
		// joins it below.
		err = tx.QueryRow(ctx, `INSERT INTO relations (principal, from_id, to_id, type, weight, properties, created_at, updated_at, provenance)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8) ON CONFLICT (from_id, to_id, type)
			DO UPDATE SET weight = excluded.weight, properties = excluded.properties, updated_at = excluded.updated_at
			RETURNING id, xmax = 0, provenance`, principal, from, to, in.Type, weight, string(props), ms(now), provArg(prov)).Scan(&id, &res.Created, &stored)
		if err != nil {
			return err
		}
		if !res.Created && prov != nil {
			if _, err := tx.Exec(ctx, `UPDATE relations SET provenance = $1 WHERE id = $2`, provArg(memory.UnionProvenance(provOf(stored), prov)), id); err != nil {
				return err
			}
		}
		res.Relation, err = relationByID(ctx, tx, id)
		return err
	})
	if err != nil {
		return memory.RelateResult{}, fmt.Errorf("relate: %w", err)
	}
	return res, nil
}

const relationSelect = `SELECT r.id, f.name, t.name, r.type, r.weight, r.properties, r.created_at, r.updated_at, r.provenance
	FROM relations r JOIN entities f ON f.id = r.from_id JOIN entities t ON t.id = r.to_id`

func relationByID(ctx context.Context, q querier, id int64) (memory.Relation, error) {
	var r memory.Relation
	var props string
	var c, u int64
	var prov *string
	if err := q.QueryRow(ctx, relationSelect+` WHERE r.id = $1`, id).Scan(&r.ID, &r.From, &r.To, &r.Type, &r.Weight, &props, &c, &u, &prov); err != nil {
		return r, fmt.Errorf("read relation: %w", err)
	}
	r.Properties, r.Provenance = []byte(props), provOf(prov)
	r.CreatedAt, r.UpdatedAt = fromMS(c), fromMS(u)
	return r, nil
}

// graph reads the graph within one transaction for the walks of package
// memory.
type graph struct{ tx pgx.Tx }

var _ memory.GraphReader = graph{}

func (g graph) EntityByID(ctx context.Context, id int64) (memory.Entity, error) {
	e, err := scanEntity(g.tx.QueryRow(ctx, `SELECT `+entityColumns+` FROM entities WHERE id = $1`, id))
	if err != nil {
		return e, fmt.Errorf("find entity %d: %w", id, err)
	}
	return e, nil
}

func (g graph) RelationByID(ctx context.Context, id int64) (memory.Relation, error) {
	return relationByID(ctx, g.tx, id)
}

func (g graph) LinkedMemories(ctx context.Context, entity int64) ([]memory.MemoryLink, error) {
	rows, err := g.tx.Query(ctx, `SELECT m.id, m.layer, m.content, m.provenance FROM memory_entities me JOIN memories m ON m.id = me.memory_id
		WHERE me.entity_id = $1 ORDER BY m.importance DESC, m.id DESC LIMIT $2`, entity, memory.LinkedPerEntity)
	if err != nil {
		return nil, fmt.Errorf("linked memories: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (memory.MemoryLink, error) {
		var l memory.MemoryLink
		var layer string
		var prov *string
		err := r.Scan(&l.ID, &layer, &l.Content, &prov)
		l.Layer, l.Content, l.Provenance = memory.Layer(layer), memory.Clip(l.Content, 300), provOf(prov)
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("linked memories: %w", err)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

func (g graph) Edges(ctx context.Context, ids []int64, dir memory.Direction, types []string) (map[int64][]memory.Edge, error) {
	var parts []string
	typeCond := ""
	if len(types) > 0 {
		typeCond = " AND type = ANY($2)"
	}
	if dir == memory.Out || dir == memory.Both {
		parts = append(parts, `SELECT from_id, to_id, id FROM relations WHERE from_id = ANY($1)`+typeCond)
	}
	if dir == memory.In || dir == memory.Both {
		parts = append(parts, `SELECT to_id, from_id, id FROM relations WHERE to_id = ANY($1)`+typeCond)
	}
	args := []any{ids}
	if len(types) > 0 {
		args = append(args, types)
	}
	rows, err := g.tx.Query(ctx, strings.Join(parts, " UNION ALL ")+` ORDER BY 1, 2, 3`, args...)
	if err != nil {
		return nil, fmt.Errorf("walk graph: %w", err)
	}
	out := map[int64][]memory.Edge{}
	var node int64
	var e memory.Edge
	if _, err := pgx.ForEachRow(rows, []any{&node, &e.Next, &e.Rel}, func() error {
		out[node] = append(out[node], e)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("walk graph: %w", err)
	}
	return out, nil
}

// readTx runs fn in a read-only repeatable-read transaction: one
// snapshot.
func (s *Store) readTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	if s.closed.Load() {
		return memory.ErrClosed
	}
	return s.beginFunc(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
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
	err = s.readTx(ctx, func(tx pgx.Tx) error {
		start, err := entityByName(ctx, tx, principal, strings.TrimSpace(in.Entity))
		if err != nil {
			return err
		}
		res, err = memory.WalkNeighbors(ctx, graph{tx}, start, in, types)
		return err
	})
	if err != nil {
		return memory.NeighborsResult{}, toolOr("neighbors", err)
	}
	return res, nil
}

// Path finds a shortest path from in.From to in.To, as
// sqlite.Store.Path does.
func (s *Store) Path(ctx context.Context, in memory.PathInput) (memory.PathResult, error) {
	principal := tools.CallerFrom(ctx).Principal
	types, err := memory.NormalizePath(&in)
	if err != nil {
		return memory.PathResult{}, err
	}
	var res memory.PathResult
	err = s.readTx(ctx, func(tx pgx.Tx) error {
		from, err := entityByName(ctx, tx, principal, strings.TrimSpace(in.From))
		if err != nil {
			return err
		}
		to, err := entityByName(ctx, tx, principal, strings.TrimSpace(in.To))
		if err != nil {
			return err
		}
		res, err = memory.FindPath(ctx, graph{tx}, from, to, in, types)
		return err
	})
	if err != nil {
		return memory.PathResult{}, toolOr("path", err)
	}
	return res, nil
}

// toolOr returns a *tools.Error in err as it is, and wraps any other
// error with the operation's name.
func toolOr(op string, err error) error {
	var te *tools.Error
	if errors.As(err, &te) {
		return te
	}
	return fmt.Errorf("%s: %w", op, err)
}

// ensureEntity returns the id of the principal's entity name, creating it
// bare, of provenance prov (its name is data of those sources), and
// whether it created it.
func ensureEntity(ctx context.Context, tx pgx.Tx, principal, name string, now time.Time, prov []byte) (int64, bool, error) {
	var id int64
	var created bool
	err := tx.QueryRow(ctx, `INSERT INTO entities (principal, name, created_at, updated_at, provenance) VALUES ($1, $2, $3, $3, $4)
		ON CONFLICT (principal, lower(name)) DO UPDATE SET updated_at = entities.updated_at RETURNING id, xmax = 0`, principal, name, ms(now), provArg(prov)).Scan(&id, &created)
	if err != nil {
		return 0, false, fmt.Errorf("find entity: %w", err)
	}
	return id, created, nil
}

// linkEntities links memory id to the named entities, creating them.
func linkEntities(ctx context.Context, tx pgx.Tx, principal string, id int64, names []string, now time.Time) error {
	prov, err := memory.Provenance(ctx, nil, "", memory.Limits{})
	if err != nil {
		return err
	}
	for _, name := range names {
		eid, _, err := ensureEntity(ctx, tx, principal, name, now, prov)
		if err != nil {
			return fmt.Errorf("link entity: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO memory_entities (memory_id, entity_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, id, eid); err != nil {
			return fmt.Errorf("link entity: %w", err)
		}
	}
	return nil
}
