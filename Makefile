# One entry point per gate; .ci/run calls these targets unchanged.
PY ?= python

.PHONY: system-deps test test-fast lint typecheck bench bench-quick check

# what the test suite needs from the system and cannot install from PyPI: Debian's Chromium
# for the browser tests in tests/browser (about 30 s: 115 packages, 113 MB). The test run
# itself never installs anything; it fails naming this target when Chromium is missing.
system-deps:
	@if [ -x /usr/bin/chromium ]; then echo "chromium: present"; else \
	  DEBIAN_FRONTEND=noninteractive apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; fi
	@# a CJK font (5 MB) so the inspector's Chinese text renders, not boxes (docs/ui.md)
	@if fc-list :lang=zh | grep -q .; then echo "CJK font: present"; else \
	  DEBIAN_FRONTEND=noninteractive apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q fonts-wqy-microhei; fi

# every core (-n auto); loadscope keeps a module's tests on one worker, so a module's fixture
# (a server, a PostgreSQL database, an indexed corpus) is built once, not once per worker
test:
	$(PY) -m pytest -q -n auto --dist loadscope

# the suite without the multi-process and crash tests (marked slow): for the edit-test loop
test-fast:
	$(PY) -m pytest -q -n auto --dist loadscope -m "not slow"

# ruff, then the layer contract of pyproject.toml ([tool.importlinter], docs/architecture.md);
# lint-imports run through $(PY) so it checks the interpreter's remem (the -e install)
lint:
	$(PY) -m ruff check src tests benchmarks examples tools
	$(PY) -c "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True, no_logo=True))"

typecheck:
	$(PY) -m mypy

bench:
	$(PY) benchmarks/store.py --sizes 10000 100000 --out benchmarks/results/store.json

bench-quick:
	$(PY) benchmarks/store.py --quick --out benchmarks/results/store-quick.json

check: lint typecheck test
