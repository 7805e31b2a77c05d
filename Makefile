# One entry point per gate; .ci/run calls these targets unchanged.
PY ?= python

.PHONY: test test-fast lint typecheck bench bench-quick check

test:
	$(PY) -m pytest -q

# the suite without the multi-process and crash tests (marked slow): for the edit-test loop
test-fast:
	$(PY) -m pytest -q -m "not slow"

lint:
	$(PY) -m ruff check src tests benchmarks examples tools

typecheck:
	$(PY) -m mypy

bench:
	$(PY) benchmarks/store.py --sizes 10000 100000 --out benchmarks/results/store.json

bench-quick:
	$(PY) benchmarks/store.py --quick --out benchmarks/results/store-quick.json

check: lint typecheck test
