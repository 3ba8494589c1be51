package postgres

import (
	"context"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// PostgreSQL's text cannot hold U+0000, nor bytes that are not UTF-8: a
// parameter with either fails the whole statement ("invalid byte
// sequence for encoding UTF8"). Programs put any text they like into
// the store — code and error messages into the audit, memories, tags,
// cache keys, notes, skills — and SQLite keeps it as it is. Here every
// query's text parameters pass through pgText on the way in (db and
// textTx below), so that nothing a program writes is refused or lost:
// each NUL, and each run of bytes that is not UTF-8, is stored as
// U+FFFD, visibly. Lookups pass the same way, so a key with a NUL finds
// what was stored under it. What the store reads back carries the
// U+FFFD (docs/memory.md).

// pgText returns s as a PostgreSQL text value can hold it.
func pgText(s string) string {
	if strings.IndexByte(s, 0) < 0 && utf8.ValidString(s) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// pgArgs returns args with every string (a string, a pointer to one, a
// slice of them, or a type whose kind is string) passed through pgText.
// Bytes ([]byte) go to bytea columns and stay as they are. args is not
// changed; it is returned itself when nothing needed a change.
func pgArgs(args []any) []any {
	var out []any
	for i, a := range args {
		b, changed := pgArg(a)
		if !changed {
			continue
		}
		if out == nil {
			out = append([]any(nil), args...)
		}
		out[i] = b
	}
	if out == nil {
		return args
	}
	return out
}

func pgArg(a any) (any, bool) {
	switch v := a.(type) {
	case nil, []byte, int, int64, int32, float64, bool:
		return a, false
	case string:
		s := pgText(v)
		return s, s != v
	case *string:
		if v == nil {
			return a, false
		}
		s := pgText(*v)
		return &s, s != *v
	case []string:
		var out []string
		for i, s := range v {
			if t := pgText(s); t != s {
				if out == nil {
					out = append([]string(nil), v...)
				}
				out[i] = t
			}
		}
		if out == nil {
			return a, false
		}
		return out, true
	}
	if rv := reflect.ValueOf(a); rv.Kind() == reflect.String {
		s := pgText(rv.String())
		return s, s != rv.String()
	}
	return a, false
}

// queryer is what a pool, a connection and a transaction have in common
// for running statements.
type queryer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// textDB runs statements on q with their text parameters as PostgreSQL
// holds them (pgText). Store.db is the pool's.
type textDB struct{ q queryer }

func (d textDB) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return d.q.Exec(ctx, sql, pgArgs(args)...)
}

func (d textDB) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return d.q.Query(ctx, sql, pgArgs(args)...)
}

func (d textDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return d.q.QueryRow(ctx, sql, pgArgs(args)...)
}

// textTx is a transaction whose statements, copies and batches have
// their text parameters as PostgreSQL holds them (pgText). Every
// transaction the store begins is one (Store.beginFunc).
type textTx struct{ pgx.Tx }

var _ pgx.Tx = textTx{}

func (t textTx) Begin(ctx context.Context) (pgx.Tx, error) {
	tx, err := t.Tx.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return textTx{tx}, nil
}

func (t textTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return t.Tx.Exec(ctx, sql, pgArgs(args)...)
}

func (t textTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return t.Tx.Query(ctx, sql, pgArgs(args)...)
}

func (t textTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return t.Tx.QueryRow(ctx, sql, pgArgs(args)...)
}

func (t textTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	return t.Tx.CopyFrom(ctx, table, columns, textRows{src})
}

func (t textTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	for _, q := range b.QueuedQueries {
		q.Arguments = pgArgs(q.Arguments)
	}
	return t.Tx.SendBatch(ctx, b)
}

// textRows is a copy's rows with their text as PostgreSQL holds it.
type textRows struct{ pgx.CopyFromSource }

func (r textRows) Values() ([]any, error) {
	vs, err := r.CopyFromSource.Values()
	return pgArgs(vs), err
}

// beginFunc runs fn in a transaction with opts on the pool, committed
// when fn returns nil; fn's transaction is a textTx.
func (s *Store) beginFunc(ctx context.Context, opts pgx.TxOptions, fn func(tx pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, s.pool, opts, func(tx pgx.Tx) error { return fn(textTx{tx}) })
}
