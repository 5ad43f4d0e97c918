# The two commands: `go run ./cmd/mcp-host serve` runs Cairn; `make test` runs every test.
GO  ?= go
BIN := $(CURDIR)/bin/mcp-host

.PHONY: build test lint gotest e2e e2e-gosdk bench bench-smoke

build:
	$(GO) build -o $(BIN) ./cmd/mcp-host

# Everything CI checks: formatting, vet, the Go tests under the race
# detector, and the end-to-end tests with the official TypeScript MCP client.
test: lint gotest e2e

lint:
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './e2e/*'))"; \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@big="$$(git ls-files '*.go' | grep -v -e '_test\.go$$' -e '^bench/' | xargs wc -l | awk '$$2 != "total" && $$1 > 500')"; \
	  if [ -n "$$big" ]; then echo "Go files over 500 lines (split them by job):"; echo "$$big"; exit 1; fi

# -race turns on checkptr everywhere; in modernc.org's SQLite (C translated
# to Go, unsafe by design) it checks nothing of ours and makes every
# statement prepare several times slower, so it is off there only.
# Three test binaries at a time on two cores: many tests wait on real
# processes and real time, so two would leave a core idle.
gotest:
	$(GO) test -p 3 -race -gcflags='modernc.org/...=-d=checkptr=0' ./...

# npm ci reinstalls from package-lock.json only when it changed since the
# last install (node_modules/.cairn-installed is its copy).
e2e: build e2e-gosdk
	@if [ -d e2e ]; then \
	  command -v node >/dev/null || { echo "node is required for the end-to-end tests (install Node.js 20+)"; exit 1; }; \
	  cd e2e && { cmp -s package-lock.json node_modules/.cairn-installed || \
	    { npm ci --no-audit --no-fund && cp package-lock.json node_modules/.cairn-installed; }; } && \
	  MCP_HOST_BIN=$(BIN) npm test; \
	fi

# The official Go SDK client at every offered protocol version, over stdio
# and HTTP: a module of its own (e2e/gosdk) so the SDK stays out of go.mod.
e2e-gosdk: build
	cd e2e/gosdk && MCP_HOST_BIN=$(BIN) $(GO) test -count=1 ./...

# Benchmarks (issue 7): `bench` measures every figure against its goal and
# against River on the same disk and rewrites BENCHMARKS.md (under 10
# minutes); `bench-smoke` runs every figure at tiny sizes, report on stdout.
bench:
	cd bench && $(GO) run . -out ../BENCHMARKS.md

bench-smoke:
	cd bench && $(GO) run . -short
