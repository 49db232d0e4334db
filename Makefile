# The two commands the README opens with: `make demo` and `make test`.
# Both install what they need first (a venv in .venv; Prometheus from Debian for the tests).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
WORKDIR ?= demo-out

.PHONY: install prometheus demo test bench clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

# promtool and the prometheus server are used by the tests (scrape + alert rules).
prometheus:
	@command -v prometheus >/dev/null && command -v promtool >/dev/null || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null)

demo: install
	$(BIN)/kraft-audit demo --workdir $(WORKDIR)

test: install prometheus
	$(BIN)/python -m pytest -q

bench: install
	for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) $(WORKDIR) .pytest_cache
