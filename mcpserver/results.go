package mcpserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/mcpserver/engine"
	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// ResultsPrefix is the URI prefix of stored results, as the engine
// names them in the records of cut results.
const ResultsPrefix = engine.ResultsPrefix

// addResults serves stored results: whole, by byte range, or by items of
// an array.
func (s *Server) addResults() {
	s.mcp.AddResourceTemplate(mcp.NewResourceTemplate(ResultsPrefix+"{id}{?offset,length}", "Stored result",
		mcp.WithTemplateDescription("The full result of a run whose output was cut; ?offset=&length= page it by bytes."),
		mcp.WithTemplateMIMEType("application/json"),
	), s.readResult)
	s.mcp.AddResourceTemplate(mcp.NewResourceTemplate(ResultsPrefix+"{id}/items{?pointer,offset,count}", "Stored result items",
		mcp.WithTemplateDescription("Items offset..offset+count of the array at JSON Pointer pointer (default the whole result) of a stored result."),
		mcp.WithTemplateMIMEType("application/json"),
	), s.readResult)
}

func (s *Server) readResult(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	uri := req.Params.URI
	u, err := url.Parse(uri)
	if err != nil || !strings.HasPrefix(uri, ResultsPrefix) {
		return nil, fmt.Errorf("%w: %s is not a result URI", errResourceNotFound, uri)
	}
	rest := strings.TrimPrefix(strings.SplitN(uri, "?", 2)[0], ResultsPrefix)
	id, items := strings.CutSuffix(rest, "/items")
	q := u.Query()
	num := func(name string, def int) (int, error) { return pageNumber(name, q.Get(name), def) }
	caller := s.caller(ctx)
	ctx = tools.WithCaller(ctx, caller)
	info, err := s.cfg.Store.StatResult(ctx, id)
	if errors.Is(err, memory.ErrNotFound) {
		return nil, fmt.Errorf("%w: no stored result %q (results are kept for a limited time)", errResourceNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("read result: %w", err)
	}
	// A read is work outside any run: the result decompressed whole, and
	// what the read makes of it. It holds those bytes of the results in
	// flight, as a run's tool result does, so that one principal's reads
	// at once wait for each other rather than take the server (issue 19,
	// sec19: 16 reads at once of a 15 MB artifact of e-mail addresses,
	// each filtered whole, took more than 300 s of the server's CPU).
	release, err := s.eng.HoldRead(ctx, caller.Principal, fmt.Sprintf("reading stored result %s takes about %d bytes (its %d bytes whole and compressed, and what the read makes of them)",
		id, s.readCost(info), info.Size), s.readCost(info))
	if err != nil {
		return nil, fmt.Errorf("read result %s: %w", id, err)
	}
	// Held until the answer is written: mcp-go encodes a blob's base64
	// once more after the handler returns.
	defer untilAnswered(ctx, release)()
	start := time.Now()
	info, data, err := s.cfg.Store.GetResult(ctx, id)
	s.eng.Metrics().ObserveStore("get_result", time.Since(start))
	if errors.Is(err, memory.ErrNotFound) {
		return nil, fmt.Errorf("%w: no stored result %q (results are kept for a limited time)", errResourceNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("read result: %w", err)
	}
	ctype := info.ContentType
	if isArtifact(info) {
		// A tool's content kept as it came, such as an image an upstream
		// server returned: it passes the filter now, under the reader's
		// session (filter.ApplyBytes says what it does with bytes).
		var vault *filter.Vault
		if caller.Session != "" {
			if sess, err := s.eng.Session(caller); err == nil && sess != nil {
				vault = sess.Vault()
			}
		}
		text := filter.IsText(data)
		if !text && binaryType(ctype) {
			// A blob is read whole: masking it costs its bytes, once.
			out := s.filter.ApplyBytes(data, filter.Options{Vault: vault})
			var meta map[string]any
			if out.Report.Masked > 0 {
				meta = map[string]any{"codecell/filter": map[string]any{"masked": out.Report.Masked, "findings": out.Report.Findings,
					"note": "sensitive values in this content's text were overwritten with '*'"}}
			}
			return []mcp.ResourceContents{mcp.BlobResourceContents{Meta: meta, URI: uri, MIMEType: ctype, Blob: base64.StdEncoding.EncodeToString(out.Data)}}, nil
		}
		if text && binaryType(ctype) {
			ctype = "text/plain; charset=utf-8" // what it is, rather than what it claimed
		}
		if !items {
			return s.readArtifactText(uri, id, ctype, data, text, q.Get("offset"), q.Get("length"), filter.Options{Vault: vault})
		}
		// Items of an artifact are items of its filtered text, which
		// must then be small enough to filter whole.
		if len(data) > s.maxBudget {
			return nil, fmt.Errorf("page result %s: it is an artifact of %d bytes, more than filter.max_budget_bytes (%d) to filter at once for its items; read it by bytes: %s%s?offset=0&length=%d",
				id, len(data), s.maxBudget, ResultsPrefix, id, s.maxBudget)
		}
		data = s.filter.ApplyBytes(data, filter.Options{Vault: vault}).Data
	} else if binaryType(ctype) {
		return []mcp.ResourceContents{mcp.BlobResourceContents{URI: uri, MIMEType: ctype, Blob: base64.StdEncoding.EncodeToString(data)}}, nil
	}
	var body any
	if items {
		offset, err1 := num("offset", 0)
		count, err2 := num("count", 100)
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		count = min(count, 1000)
		page, err := filter.PageItems(data, q.Get("pointer"), offset, count, s.maxBudget)
		if err != nil {
			return nil, fmt.Errorf("page result %s: %w", id, err)
		}
		body = page
	} else {
		// A page is what the model reads: the response budget unless the
		// reader asks for more, up to the largest budget.
		if q.Get("offset") == "" && q.Get("length") == "" && len(data) <= s.budget {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: ctype, Text: string(data)}}, nil
		}
		offset, err1 := num("offset", 0)
		length, err2 := num("length", s.budget)
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		length = min(length, s.maxBudget)
		page, err := filter.PageBytes(data, offset, length)
		if err != nil {
			return nil, fmt.Errorf("page result %s: %w", id, err)
		}
		body = struct {
			filter.BytePage
			Data string `json:"data"`
		}{page, string(page.Data)}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode page: %w", err)
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: "application/json", Text: string(b)}}, nil
}

// isArtifact reports whether a stored result is a tool's content kept as
// it came (upstream.Blobs, openapi.Artifacts), which the filter has not
// seen: a run's result carries its execution's id, and was filtered
// before it was stored.
func isArtifact(info memory.ResultInfo) bool { return info.ExecutionID == "" }

// readCost is about what reading the stored result info takes in the
// server, which the read holds of the results in flight until the answer
// is written: its bytes compressed and whole, and what the read makes of
// them — a blob masked (if an artifact), in base64 and encoded in the
// answer, five times its bytes; any other read a page at most, filtered
// or encoded, counted as 16 of the largest budget.
func (s *Server) readCost(info memory.ResultInfo) int64 {
	if binaryType(info.ContentType) {
		return info.StoredSize + 6*info.Size
	}
	return info.StoredSize + info.Size + 16*int64(s.maxBudget)
}

// readArtifactText answers a read of an artifact's text, filtered under
// opts: whole when it is no larger than filter.max_budget_bytes and no
// page is asked for, else a page of it, of the response budget unless the
// reader asks for more, up to the largest budget — the page is what is
// filtered, and its boundaries cut no value the filter would find
// (filter.PageText). Bytes that are not text are paged as bytes, their
// sensitive values masked in place.
func (s *Server) readArtifactText(uri, id, ctype string, data []byte, text bool, offsetArg, lengthArg string, opts filter.Options) ([]mcp.ResourceContents, error) {
	if offsetArg == "" && lengthArg == "" && len(data) <= s.maxBudget {
		out := s.filter.ApplyBytes(data, opts)
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: ctype, Text: string(out.Data)}}, nil
	}
	offset, err1 := pageNumber("offset", offsetArg, 0)
	length, err2 := pageNumber("length", lengthArg, s.budget)
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	length = min(length, s.maxBudget)
	page, err := filter.PageBytes(data, offset, length)
	if text {
		page, err = filter.PageText(data, offset, length)
	}
	if err != nil {
		return nil, fmt.Errorf("page result %s: %w", id, err)
	}
	out := s.filter.ApplyBytes(page.Data, opts)
	b, err := json.Marshal(struct {
		filter.BytePage
		Filtered bool   `json:"filtered"`
		Data     string `json:"data"`
	}{page, true, string(out.Data)})
	if err != nil {
		return nil, fmt.Errorf("encode page: %w", err)
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: "application/json", Text: string(b)}}, nil
}

// pageNumber is a page's argument name, v, as a whole number ≥ 0; def
// when v is empty.
func pageNumber(name, v string, def int) (int, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%q: want a whole number ≥ 0", name, v)
	}
	return n, nil
}

// binaryType reports whether a stored result of this content type is
// bytes rather than text: read as a blob, whole.
func binaryType(ct string) bool {
	ct, _, _ = strings.Cut(ct, ";")
	ct = strings.TrimSpace(strings.ToLower(ct))
	switch {
	case ct == "" || strings.HasPrefix(ct, "text/"), ct == "application/json", strings.HasSuffix(ct, "+json"),
		strings.HasSuffix(ct, "+xml"), ct == "application/xml", ct == "application/javascript":
		return false
	}
	return true
}

// LedgerURI is the resource holding the session's running totals.
const LedgerURI = "codecell://session/ledger"

// addLedger serves the session's running totals: runs, tool calls, bytes
// and tokens read from tools against those returned to the model, and
// what the filter found.
func (s *Server) addLedger() {
	s.mcp.AddResource(mcp.NewResource(LedgerURI, "Session ledger",
		mcp.WithResourceDescription("This session's running totals: context read by programs from tools versus returned to the model, and what the output filter found."),
		mcp.WithMIMEType("application/json"),
	), func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		c := s.caller(ctx)
		sess, err := s.eng.Session(c)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(sess.Totals())
		if err != nil {
			return nil, err
		}
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: LedgerURI, MIMEType: "application/json", Text: string(b)}}, nil
	})
}
